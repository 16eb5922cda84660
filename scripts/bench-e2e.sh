#!/usr/bin/env bash
# End-to-end benchmark (not part of CI): a private mosquitto and mobilityd (wall clock, durable
# state on) on loopback; measures the broker's own QoS 1 pass-through ceiling and mobilityd's
# throughput in the same run (1 sample per message, and 50), and alert latency at ~1k samples/s.
#   scripts/bench-e2e.sh [MESSAGES] [RUNS]     (each figure: every round, then the median of RUNS)
#   MOBILITYD_ARGS="--publish-series false" scripts/bench-e2e.sh …   (extra mobilityd options; default: mobilityd's defaults, series on)
set -euo pipefail
cd "$(dirname "$0")/.."
messages=${1:-50000}
runs=${2:-3}
bash scripts/install-deps.sh
swift build -c release >/dev/null
bin=$PWD/.build/release
work=$(mktemp -d /tmp/mw-bench.XXXXXX)
cleanup() { kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port); mport=$(free_port)
printf 'listener %s 127.0.0.1\nallow_anonymous true\nmax_queued_messages 0\nmax_inflight_messages 0\n%s\n' "$port" "$( [ "$(id -u)" = 0 ] && echo 'user root')" > "$work/m.conf"
mosquitto -c "$work/m.conf" >/dev/null 2>&1 &
sleep 0.3
"$bin/mobilityd" --broker mqtt://127.0.0.1:$port --rules rules --state "$work/state" --clock wall ${MOBILITYD_ARGS:-} \
  --metrics-address 127.0.0.1:$mport --log-level warn >"$work/mobilityd.log" 2>&1 &
sleep 1
echo "== $(nproc) cores; mosquitto $(mosquitto -h 2>&1 | head -1 | awk '{print $3}'); $messages messages per measurement"
"$bin/mobility-bench" e2e --broker mqtt://127.0.0.1:$port --metrics-port $mport --messages "$messages" --batch 1 --runs "$runs"
"$bin/mobility-bench" e2e --broker mqtt://127.0.0.1:$port --metrics-port $mport --messages $((messages / 5)) --batch 50 --runs "$runs" --latency off
