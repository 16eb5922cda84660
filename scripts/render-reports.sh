#!/usr/bin/env bash
# Renders the care-team pages of every shipped scenario to PNG with headless Chromium, to look at
# them as a person would: a desk-width and a phone-width (390 px) picture of each page.
#   bash scripts/render-reports.sh [OUT_DIR]      (default .build/reports)
#   bash scripts/render-reports.sh --docs         (also rewrites the three pictures in docs/images)
# The pages come from CareReportsTests (RenderedPagesTests builds each scenario's history with the
# shipped rules and writes its pages to RENDER_REPORTS_DIR); Chromium is Debian's
# chromium-headless-shell, which scripts/install-deps.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."
docs=0
if [ "${1:-}" = "--docs" ]; then docs=1; shift; fi
out="${1:-.build/reports}"
mkdir -p "$out"
chmod 700 "$out"
out="$(cd "$out" && pwd)"
command -v chromium-headless-shell >/dev/null 2>&1 || bash scripts/install-deps.sh
RENDER_REPORTS_DIR="$out" swift test --filter 'CareReportsTests.RenderedPagesTests/everyShippedScenarioHasWellFormedPages' >/dev/null
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
shot() {  # shot WIDTH HEIGHT PAGE PNG
  chromium-headless-shell --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$profile" \
    --window-size="$1,$2" --screenshot="$4" "file://$3" >/dev/null 2>&1
}
n=0
for page in "$out"/*.html; do
  base="${page%.html}"
  shot 1000 2600 "$page" "$base.png"
  shot 390 3400 "$page" "$base.phone.png"
  n=$((n + 1))
done
echo "render-reports: $n pages → $out/*.png and *.phone.png" >&2
if [ "$docs" = 1 ]; then
  # The pictures of docs/care-reports.md, 720 px wide: a copy of the page with a rule added to its
  # style sheet that hides what the picture leaves out.
  picture() {  # picture PAGE HEIGHT CSS PNG
    sed "s|</style>|$3</style>|" "$out/$1.html" > "$profile/page.html"
    shot 720 "$2" "$profile/page.html" "docs/images/$4"
  }
  picture jamie-plateau.panel 1120 ".six-minute-walk,.footer{display:none}" care-report-plateau-panel.png
  picture jamie-heat-wave.weekly 2160 ".footer{display:none}" care-report-heat-wave-weekly.png
  picture clinic-disagreement.panel 470 "body>h1,body>.subtitle,.recovery-panel,.gait-quality,.footer{display:none}" care-report-clinic-6mwd.png
  ls -l docs/images/*.png >&2
fi
