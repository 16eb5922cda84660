#!/usr/bin/env bash
# Restart-after-crash benchmark (not part of CI): mobilityd (--clock event, durability on)
# takes a mobility-sim population cohort's history and is killed with SIGKILL once every message
# is journalled and processed. Then two restarts, each timed from its start until it is
# subscribed again (ready: READY=1, the journal routed to the shards) and until it has caught up
# (every journal record applied or skipped as already committed, queues empty):
#   crashed — the state as the kill left it (the journal holds what was not committed yet: at
#             most --commit-interval of traffic, here 60 s);
#   full journal — every journal segment of the run (hard links keep the segments the daemon
#             released) and no store: every message is applied from the journal, as after a crash
#             with that many messages uncommitted.
#   scripts/bench-restart.sh [USERS] [DAYS] [RUNS]      (300 × 90 ≈ 1.14 M messages)
#   BEFORE=DIR: also restarts DIR/mobilityd (another build) on a copy of the same crashed state, side by side;
#   BEFORE_RULES=DIR: the rule pack that build reads (default rules/; an older build may not read today's).
set -euo pipefail
cd "$(dirname "$0")/.."
users=${1:-300}; days=${2:-90}; runs=${3:-1}
bash scripts/install-deps.sh
swift build -c release >/dev/null
bin=$PWD/.build/release
work=$(mktemp -d /tmp/mw-restart.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
"$bin/mobility-sim" population --users "$users" --days "$days" --seed 1 --samples-per-message 1 -o "$work/traffic.jsonl" >/dev/null 2>&1
messages=$(wc -l < "$work/traffic.jsonl")
echo "== $(nproc) cores; $users users × $days days: $messages messages of one sample"
metric() { curl -s "http://127.0.0.1:$mport/metrics" | awk -v n="$1" '$1 == n { print $2 }'; }
num() { local v; v=$(metric "$1"); echo "${v%.*}"; }
depth() { curl -s "http://127.0.0.1:$mport/metrics" | awk '$1 ~ /^mobilityd_queue_depth/ { s += $2 } END { print s + 0 }'; }
daemon() {
  "${1:-$bin}/mobilityd" --broker "mqtt://127.0.0.1:$port" --rules "${2:-rules}" --state "$work/state" --clock event --commit-interval 60000 \
    --metrics-address "127.0.0.1:$mport" --log-level info >>"$work/mobilityd.log" 2>&1 & daemon=$!; pids+=($daemon)
}
for round in $(seq "$runs"); do
  port=$(free_port); mport=$(free_port)
  printf 'listener %s 127.0.0.1\nallow_anonymous true\nmax_queued_messages 0\nmax_inflight_messages 0\n%s\n' "$port" "$( [ "$(id -u)" = 0 ] && echo 'user root')" > "$work/m.conf"
  mosquitto -c "$work/m.conf" >/dev/null 2>&1 & broker=$!; pids+=($broker)
  for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/"$port") 2>/dev/null && break; sleep 0.05; done
  rm -rf "$work/state"; : > "$work/mobilityd.log"
  daemon
  for _ in $(seq 200); do [ "$(metric mobilityd_broker_subscribed)" = 1 ] && break; sleep 0.05; done
  mkdir -p "$work/segments"
  ( while kill -0 "$daemon" 2>/dev/null; do for f in "$work"/state/journal/*.log; do [ -e "$f" ] && ln -f "$f" "$work/segments/"; done; sleep 0.2; done ) & keeper=$!
  "$bin/mobility-sim" play "$work/traffic.jsonl" --broker "mqtt://127.0.0.1:$port" --speed max >/dev/null 2>&1
  until [ "$(num mobilityd_messages_received_total)" -ge "$messages" ] && [ "$(depth)" = 0 ]; do sleep 0.05; done
  kill -9 "$daemon"; wait "$daemon" 2>/dev/null || true
  wait "$keeper" 2>/dev/null || true
  cp -a "$work/state" "$work/crashed"
  mkdir -p "$work/full"; chmod 700 "$work/full"; cp -a "$work/state/journal" "$work/full/journal"
  for f in "$work"/segments/*.log; do ln -f "$f" "$work/full/journal/"; done
  for kind in crashed full; do
  for build in $bin ${BEFORE:-}; do
  rm -rf "$work/state"; cp -a "$work/$kind" "$work/state"; : > "$work/mobilityd.log"
  journal=$(du -sm "$work/state/journal" | cut -f1)
  start=$(now)
  if [ "$build" = "$bin" ]; then daemon "$build"; else daemon "$build" "${BEFORE_RULES:-rules}"; fi
  until [ "$(metric mobilityd_broker_subscribed 2>/dev/null)" = 1 ]; do
    kill -0 "$daemon" 2>/dev/null || { echo "bench-restart: $build/mobilityd exited:" >&2; cat "$work/mobilityd.log" >&2; exit 1; }
    sleep 0.01
  done
  ready=$(now)
  records=$(grep -o 'journal_records=[0-9]*' "$work/mobilityd.log" | tail -1 | cut -d= -f2)
  until [ $(( $(num mobilityd_messages_received_total) + $(num mobilityd_journal_skipped_total) )) -ge "$records" ] && [ "$(depth)" = 0 ]; do sleep 0.01; done
  caught=$(now)
  applied=$(num mobilityd_messages_received_total); skipped=$(num mobilityd_journal_skipped_total)
  python3 -c "s=$start; print(f'round $round, $kind, $( [ "$build" = "$bin" ] && echo this build || echo before ): journal {$records:,} records ({$journal} MB): ready (subscribed) after {$ready-s:.2f} s, caught up after {$caught-s:.2f} s ({$applied:,} applied, {$skipped:,} skipped as committed: {$applied/($caught-s):,.0f} records/s)')"
  kill -9 "$daemon"; wait "$daemon" 2>/dev/null || true
  done
  done
  rm -rf "$work/crashed" "$work/full" "$work/segments"
  kill "$broker"; wait "$broker" 2>/dev/null || true
done
