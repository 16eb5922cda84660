#!/usr/bin/env bash
# The whole benchmark suite in one command (not part of CI; CI runs `mobility-bench --smoke`).
# Installs what it needs, builds with -c release, then runs, as documented in docs/benchmarks.md:
#   1. memory, day close and restart (USERS users with 120 days of history; first, because
#      resident memory is measured as the process's growth),
#   2. decode and engine (USERS users × 30 days),
#   3. end to end against a private mosquitto and mobilityd (scripts/bench-e2e.sh),
#   4. replay against a plain-Python reference and a Flink SQL job (scripts/bench-replay.sh,
#      REPLAY_USERS users x 90 days, default 1000; REPLAY_USERS=0 skips it).
#   scripts/bench.sh [USERS] [E2E_MESSAGES] [RUNS]      defaults: 10000 40000 3
set -euo pipefail
cd "$(dirname "$0")/.."
users=${1:-10000}
messages=${2:-40000}
runs=${3:-3}
bash scripts/install-deps.sh
swift build -c release >/dev/null
bin=$PWD/.build/release
echo "== $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null || echo unknown); $(nproc) cores"
"$bin/mobility-bench" memory dayclose restart --users "$users" --days 120 --runs "$runs"
"$bin/mobility-bench" decode engine --users "$users" --days 30 --runs 5
bash scripts/bench-e2e.sh "$messages" "$runs"
if [[ "${REPLAY_USERS:-1000}" != 0 ]]; then bash scripts/bench-replay.sh "${REPLAY_USERS:-1000}" 90; fi
