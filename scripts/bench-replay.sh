#!/usr/bin/env bash
# The replay benchmark of issue 18 (docs/benchmarks.md, "Replay (issue 18)"), side by side in one run:
# the same computation — per-user local-day R-7 p95 of walking speed and its 7-day mean (>= 4 days),
# never across the injury — by mobilityctl replay (1 and 2 threads), a plain-Python reference and a
# PyFlink SQL job, on traffic from mobility-sim population (one sample a message); simdjson's own
# parse rate on the file as the bound; the outputs compared (<= 1e-6).
#   scripts/bench-replay.sh [USERS] [DAYS] [BEFORE_BIN]     defaults: 1000 90, no "before" build
# BEFORE_BIN: a directory with another build's mobilityctl (e.g. main's .build/release) to run too.
# PyFlink (PyPI apache-flink, benchmark tooling only) goes to a private venv in
# ${MW_BENCH_VENV:-$HOME/.cache/mobilitywatch/flink-venv}; it needs java (17) on the PATH. With
# MW_BENCH_NO_FLINK=1 the Flink job is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
users=${1:-1000}
days=${2:-90}
before=${3:-}
root=$PWD
work=$(mktemp -d "${TMPDIR:-/tmp}/mw-bench-replay.XXXXXX")
chmod 700 "$work"
trap 'rm -rf "$work"' EXIT
swift build -c release --product mobilityctl >/dev/null
swift build -c release --product mobility-sim >/dev/null
bin=$root/.build/release
traffic=$work/traffic.jsonl
"$bin/mobility-sim" population --users "$users" --days "$days" --seed 1 --samples-per-message 1 -o "$traffic"
printf 'series speed_p95 = p95(walkingSpeed, source: device)\nseries speed_7d  = mean(speed_p95, 7 d, min: 4)\n' >"$work/speed.rules"
lines=$(wc -l <"$traffic")
samples=$(grep -c '/samples"' "$traffic")
echo "== $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null || echo unknown); $(nproc) cores; $users users x $days days:" \
    "$lines lines, $samples samples, $(du -m "$traffic" | cut -f1) MB"
cat "$traffic" >/dev/null  # in the page cache for every contestant

c++ -O2 -std=c++17 scripts/bench/simdjson_rate.cpp -lsimdjson -o "$work/simdjson_rate"
"$work/simdjson_rate" "$traffic"

ns=0
timed() { # CMD...: runs it (output to $work/out, $work/err); its wall time in $ns
    local t0
    t0=$(date +%s%N)
    "$@" >"$work/out" 2>"$work/err"
    ns=$(($(date +%s%N) - t0))
}
secs() { printf '%d.%03d s' $((ns / 1000000000)) $((ns / 1000000 % 1000)); }
rate() { echo "$((samples * 1000000000 / ns)) samples/s"; }

for threads in 1 2; do
    timed "$bin/mobilityctl" replay --rules "$work/speed.rules" --series --threads "$threads" "$traffic"
    cp "$work/out" "$work/replay-$threads.jsonl"
    echo "mobilityctl replay --threads $threads: $(secs), $(rate)"
done
cmp -s "$work/replay-1.jsonl" "$work/replay-2.jsonl" && echo "  1 and 2 threads: the same bytes" || { echo "  1 and 2 threads DIFFER"; exit 1; }
if [[ -n "$before" ]]; then
    timed "$before/mobilityctl" replay --rules "$work/speed.rules" --series "$traffic"
    echo "before (mobilityctl replay of $before): $(secs), $(rate)"
    cmp -s "$work/out" "$work/replay-1.jsonl" && echo "  the same bytes as now" || echo "  output differs from now"
fi

timed python3 scripts/bench/replay_reference.py "$traffic"
cp "$work/out" "$work/reference.jsonl"
echo "plain Python reference: $(secs), $(rate)"
python3 scripts/bench/compare_series.py "$work/replay-2.jsonl" "$work/reference.jsonl"

if [[ "${MW_BENCH_NO_FLINK:-}" != 1 ]]; then
    venv=${MW_BENCH_VENV:-$HOME/.cache/mobilitywatch/flink-venv}
    if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import pyflink' 2>/dev/null; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q 'apache-flink==2.3.0'
    fi
    timed "$venv/bin/python" scripts/bench/replay_flink.py "$traffic" "$work/flink.jsonl"
    echo "Flink SQL (PyFlink, local mini-cluster, parallelism 2): $(secs) wall, $(rate); $(grep '^flink:' "$work/err")"
    python3 scripts/bench/compare_series.py "$work/replay-2.jsonl" "$work/flink.jsonl"
fi
