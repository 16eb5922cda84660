#!/usr/bin/env bash
# What the care-team history costs end to end (not part of CI; figures in docs/benchmarks.md,
# "State store"). A cohort is played at full speed through a private mosquitto into
# mobilityd --clock event (durable state, default settings: every day close records the series in
# the history and, at each Sunday, builds the weekly reports), alternately with the history on
# (default) and off (--history-days off), ROUNDS times each, in one run. Each round: messages per
# second from the first publish until the daemon is idle, and the store's size.
#   scripts/bench-history.sh [USERS] [DAYS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
users=${1:-300}; days=${2:-90}; rounds=${3:-2}
bash scripts/install-deps.sh >/dev/null
swift build -c release >/dev/null
bin=$PWD/.build/release
work=$(mktemp -d /tmp/mw-bench-history.XXXXXX)
cleanup() { kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
"$bin/mobility-sim" population --users "$users" --days "$days" --seed 7 -o "$work/traffic.jsonl" 2>/dev/null
messages=$(wc -l < "$work/traffic.jsonl")
metric() { curl -s "http://127.0.0.1:$mport/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
echo "== $(nproc) cores; $users users x $days days, $messages messages a round"
for r in $(seq "$rounds"); do
  for mode in on off; do
    port=$(free_port); mport=$(free_port)
    printf 'listener %s 127.0.0.1\nallow_anonymous true\nmax_queued_messages 0\nmax_inflight_messages 0\n%s\n' "$port" "$( [ "$(id -u)" = 0 ] && echo 'user root')" > "$work/m.conf"
    mosquitto -c "$work/m.conf" >/dev/null 2>&1 & broker=$!
    sleep 0.3
    args=(); [ "$mode" = off ] && args=(--history-days off)
    rm -rf "$work/state"
    "$bin/mobilityd" --broker mqtt://127.0.0.1:$port --rules rules --state "$work/state" --clock event "${args[@]}" \
      --metrics-address 127.0.0.1:$mport --log-level warn >"$work/mobilityd.log" 2>&1 & daemon=$!
    until [ "$(metric mobilityd_broker_subscribed)" = 1 ]; do sleep 0.1; done
    start=$(date +%s.%N)
    "$bin/mobility-sim" play "$work/traffic.jsonl" --broker mqtt://127.0.0.1:$port --speed max 2>/dev/null
    until [ "$(metric mobilityd_messages_received_total)" = "$messages" ] && [ "$(metric mobilityd_outputs_unacknowledged)" = 0 ]; do sleep 0.05; done
    end=$(date +%s.%N)
    reports=$(metric mobilityd_weekly_reports_total)
    kill -TERM $daemon; wait $daemon || true
    kill -TERM $broker; wait $broker 2>/dev/null || true
    size=$(du -sk "$work/state" | cut -f1)
    python3 -c "print(f'round $r history $mode: {${messages}/($end-$start):8.0f} msg/s, {($end-$start):6.1f} s, weekly reports ${reports:-0}, state {$size/1024:.1f} MiB')"
  done
done
