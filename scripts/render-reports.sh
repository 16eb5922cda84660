#!/usr/bin/env bash
# Renders the care-team pages of every shipped scenario to PNG with headless Chromium, to look at
# them as a person would: a desk-width and a phone-width (390 px) picture of each page.
#   bash scripts/render-reports.sh [OUT_DIR]      (default .build/reports)
# The pages come from CareReportsTests (RenderedPagesTests builds each scenario's history with the
# shipped rules and writes its pages to RENDER_REPORTS_DIR); Chromium is Debian's
# chromium-headless-shell, which scripts/install-deps.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."
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
