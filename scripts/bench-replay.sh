#!/usr/bin/env bash
# The replay benchmark (docs/benchmarks.md, "Replay and the quality run"), side by side in one run:
# the same computation — per-user local-day R-7 p95 of walking speed and its 7-day mean (>= 4 days),
# never across the injury — by mobilityctl replay (1 and 2 threads), a plain-Python reference and a
# PyFlink SQL job, on traffic from mobility-sim population (one sample a message); simdjson's own
# parse rate on the file as the bound; the outputs compared (<= 1e-6).
#   scripts/bench-replay.sh [USERS] [DAYS] [BEFORE_BIN]     defaults: 1000 90, no "before" build
# BEFORE_BIN: a directory with another build's mobilityctl (e.g. main's .build/release) to run too,
# side by side with this build in each of REPLAY_ROUNDS rounds (default 3; medians printed).
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

ns=0 cpu=0
timed() { # CMD...: runs it (output to $work/out, $work/err); its wall time in $ns, user+sys CPU ms in $cpu
    local t0
    t0=$(date +%s%N)
    /usr/bin/time -f '%U %S' -o "$work/time" "$@" >"$work/out" 2>"$work/err"
    ns=$(($(date +%s%N) - t0))
    cpu=$(awk '{printf "%d", ($1 + $2) * 1000}' "$work/time")
}
secs() { printf '%d.%03d s' $((ns / 1000000000)) $((ns / 1000000 % 1000)); }
rate() { echo "$((samples * 1000000000 / ns)) samples/s"; }

# Replay, now and (when given) before, 1 and 2 threads, side by side in each of $rounds rounds
# (REPLAY_ROUNDS, default 3); medians at the end. On a shared machine the wall time depends on
# the others' load; CPU time (user + sys) much less so.
rounds=${REPLAY_ROUNDS:-3}
contestants=(now)
[[ -n "$before" ]] && contestants+=(before)
: >"$work/rounds"
for round in $(seq "$rounds"); do
    for who in "${contestants[@]}"; do
        dir=$bin
        [[ $who == before ]] && dir=$before
        for threads in 1 2; do
            timed "$dir/mobilityctl" replay --rules "$work/speed.rules" --series --threads "$threads" "$traffic"
            cp "$work/out" "$work/replay-$who-$threads.jsonl"
            echo "round $round: $who --threads $threads: $(secs) wall, $(rate), CPU $cpu ms"
            echo "$who $threads $ns $cpu" >>"$work/rounds"
        done
    done
    echo "  load: $(cut -d' ' -f1-3 /proc/loadavg)"
done
python3 - "$work/rounds" "$samples" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
samples = int(sys.argv[2])
for key in sorted({(w, t) for w, t, _, _ in rows}):
    ns = statistics.median(int(r[2]) for r in rows if (r[0], r[1]) == key)
    cpu = statistics.median(int(r[3]) for r in rows if (r[0], r[1]) == key)
    print(f"median {key[0]} --threads {key[1]}: {ns / 1e9:.2f} s wall ({samples / ns * 1e9 / 1e3:.0f} k samples/s), "
          f"{cpu / 1e3:.2f} s CPU ({samples / cpu:.0f} k samples per CPU-second)")
PY
cp "$work/replay-now-1.jsonl" "$work/replay-1.jsonl"
cp "$work/replay-now-2.jsonl" "$work/replay-2.jsonl"
cmp -s "$work/replay-1.jsonl" "$work/replay-2.jsonl" && echo "  1 and 2 threads: the same bytes" || { echo "  1 and 2 threads DIFFER"; exit 1; }
if [[ -n "$before" ]]; then
    cmp -s "$work/replay-before-1.jsonl" "$work/replay-1.jsonl" && echo "  before: the same bytes as now" || echo "  before: output differs from now"
fi

timed python3 scripts/bench/replay_reference.py "$traffic"
cp "$work/out" "$work/reference.jsonl"
echo "plain Python reference: $(secs), $(rate), CPU $cpu ms"
python3 scripts/bench/compare_series.py "$work/replay-2.jsonl" "$work/reference.jsonl"

if [[ "${MW_BENCH_NO_FLINK:-}" != 1 ]]; then
    venv=${MW_BENCH_VENV:-$HOME/.cache/mobilitywatch/flink-venv}
    if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import pyflink' 2>/dev/null; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q 'apache-flink==2.3.0'
    fi
    timed "$venv/bin/python" scripts/bench/replay_flink.py "$traffic" "$work/flink.jsonl"
    echo "Flink SQL (PyFlink, local mini-cluster, parallelism 2): $(secs) wall, $(rate), CPU $cpu ms (children it waited for included); $(grep '^flink:' "$work/err")"
    python3 scripts/bench/compare_series.py "$work/replay-2.jsonl" "$work/flink.jsonl"
fi
