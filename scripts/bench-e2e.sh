#!/usr/bin/env bash
# End-to-end benchmark (not part of CI): a private mosquitto and mobilityd (wall clock, durable
# state on) on loopback; measures the broker's own QoS 1 pass-through ceiling, a journal-only bound
# (one libmosquitto subscriber that only appends each message to an IngestJournal, as mobilityd's
# network thread does) and mobilityd's throughput in the same round (1 sample per message, and 50),
# and alert latency at ~1k samples/s. After each throughput figure, what one message cost in CPU: the broker, mobilityd
# and the harness (its publisher, and in the first two its subscriber), and how many cores were busy: the
# three share this machine's cores, so a throughput is what the others leave (docs/benchmarks.md, "End to end").
#   scripts/bench-e2e.sh [MESSAGES] [RUNS]     (each figure: every round, then the median of RUNS)
#   MOBILITYD_ARGS="--publish-series false" scripts/bench-e2e.sh …   (extra mobilityd options; default: mobilityd's defaults, series on)
# Then a phone syncing after days offline: mobility-sim population --sync-days $SYNC_DAYS (3) with 50-sample
# messages running across the days of a sync ($SYNC_USERS users × 90 days, default 300; 0 skips), into a
# fresh mobilityd --clock event (days close mid-sync, series published), against the ceiling on the same payloads.
#   MOBILITYD=PATH: the mobilityd to measure (default this build's), e.g. another build side by side;
#   MOBILITY_BENCH=PATH: the harness (default this build's mobility-bench), e.g. another build's, to compare harnesses;
#   RULES=DIR: its rule pack (default rules/; an older build may not read today's).
#   E2E_LEGS="1 50 sync": the legs to run (default all three).
set -euo pipefail
cd "$(dirname "$0")/.."
messages=${1:-50000}
runs=${2:-3}
bash scripts/install-deps.sh
swift build -c release >/dev/null
bin=$PWD/.build/release
daemon_bin=${MOBILITYD:-$bin/mobilityd}
bench=${MOBILITY_BENCH:-$bin/mobility-bench}
legs=${E2E_LEGS:-1 50 sync}
work=$(mktemp -d /tmp/mw-bench.XXXXXX)
cleanup() { kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port); mport=$(free_port)
printf 'listener %s 127.0.0.1\nallow_anonymous true\nmax_queued_messages 0\nmax_inflight_messages 0\n%s\n' "$port" "$( [ "$(id -u)" = 0 ] && echo 'user root')" > "$work/m.conf"
mosquitto -c "$work/m.conf" >/dev/null 2>&1 &
broker=$!
sleep 0.3
"$daemon_bin" --broker mqtt://127.0.0.1:$port --rules "${RULES:-rules}" --state "$work/state" --clock wall ${MOBILITYD_ARGS:-} \
  --metrics-address 127.0.0.1:$mport --log-level warn >"$work/mobilityd.log" 2>&1 &
daemon=$!
sleep 1
echo "== $(nproc) cores; mosquitto $(mosquitto -h 2>&1 | head -1 | awk '{print $3}'); $messages messages per measurement"
case " $legs " in *" 1 "*) "$bench" e2e --scratch "$work" --cpu mosquitto=$broker --cpu mobilityd=$daemon --broker mqtt://127.0.0.1:$port --metrics-port $mport --messages "$messages" --batch 1 --runs "$runs" ;; esac
case " $legs " in *" 50 "*) "$bench" e2e --scratch "$work" --cpu mosquitto=$broker --cpu mobilityd=$daemon --broker mqtt://127.0.0.1:$port --metrics-port $mport --messages $((messages / 5)) --batch 50 --runs "$runs" --latency off ;; esac
sync_users=${SYNC_USERS:-300}
if [ "$sync_users" -gt 0 ] && case " $legs " in *" sync "*) true ;; *) false ;; esac; then
  kill "$daemon"; wait "$daemon" 2>/dev/null || true
  "$bin/mobility-sim" population --users "$sync_users" --days 90 --seed 1 --samples-per-message 50 --sync-days "${SYNC_DAYS:-3}" -o "$work/sync.jsonl" >/dev/null 2>&1
  mport=$(free_port)
  "$daemon_bin" --broker mqtt://127.0.0.1:$port --rules "${RULES:-rules}" --state "$work/state-sync" --clock event --client-id mobilityd-sync ${MOBILITYD_ARGS:-} \
    --metrics-address 127.0.0.1:$mport --log-level warn >"$work/mobilityd-sync.log" 2>&1 &
  daemon=$!
  sleep 1
  echo "== a sync every ${SYNC_DAYS:-3} days, 50-sample messages across its days ($sync_users users × 90 days, --clock event)"
  "$bench" e2e --scratch "$work" --cpu mosquitto=$broker --cpu mobilityd=$daemon --broker mqtt://127.0.0.1:$port --metrics-port $mport --traffic "$work/sync.jsonl" --runs "$runs"
fi
