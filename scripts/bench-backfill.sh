#!/usr/bin/env bash
# Backfill benchmark (not part of CI): a cohort's whole history (mobility-sim population: days
# that close, so series are published) played as fast as the broker takes it into mobilityd
# (--clock event, durability on, otherwise default settings), with series published (the
# default) and without, side by side in one run with the broker's own ceiling on the same
# traffic (the same player into a QoS 1 subscriber that only counts: mosquitto_sub -C); the time
# is from the first publish until mobilityd has processed every message and the broker has
# acknowledged every output (the ceiling: until the subscriber has every message).
#   scripts/bench-backfill.sh [USERS] [DAYS] [SAMPLES_PER_MESSAGE] [RUNS] [SYNC_DAYS]
# SYNC_DAYS: each phone syncs every that many days, its samples of those days in messages running
# across them (mobility-sim population --sync-days; a phone back after days offline).
# BEFORE=DIR: also runs DIR/mobilityd (another build) with series on in each round, side by side.
# MODES="ceiling on off": the legs of a round, in order (before is added after on with BEFORE).
set -euo pipefail
cd "$(dirname "$0")/.."
users=${1:-300}; days=${2:-90}; spm=${3:-1}; runs=${4:-2}; sync=${5:-}
modes=${MODES:-ceiling on off}
if [ -n "${BEFORE:-}" ]; then modes=${modes/on/on before}; fi
bash scripts/install-deps.sh
swift build -c release >/dev/null
bin=$PWD/.build/release
work=$(mktemp -d /tmp/mw-backfill.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
"$bin/mobility-sim" population --users "$users" --days "$days" --seed 1 --samples-per-message "$spm" ${sync:+--sync-days "$sync"} -o "$work/traffic.jsonl" >/dev/null 2>&1
messages=$(wc -l < "$work/traffic.jsonl")
samples=$(grep -o '"type' "$work/traffic.jsonl" | wc -l)
echo "== $(nproc) cores; $users users × $days days: $messages messages, $samples samples ($spm a message at most${sync:+; a sync every $sync days})"
metric() { curl -s "http://127.0.0.1:$mport/metrics" | awk -v n="$1" '$1 == n { print $2 }'; }
for round in $(seq "$runs"); do
  for mode in $modes; do
    port=$(free_port); mport=$(free_port)
    printf 'listener %s 127.0.0.1\nallow_anonymous true\nmax_queued_messages 0\nmax_inflight_messages 0\n%s\n' "$port" "$( [ "$(id -u)" = 0 ] && echo 'user root')" > "$work/m.conf"
    mosquitto -c "$work/m.conf" >/dev/null 2>&1 & broker=$!; pids+=($broker)
    for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/"$port") 2>/dev/null && break; sleep 0.05; done
    if [ $mode = ceiling ]; then
      mosquitto_sub -h 127.0.0.1 -p "$port" -q 1 -i mw-ceiling -t 'mobility/v1/users/+/+' -C "$messages" >/dev/null & sub=$!
      sleep 0.3
      start=$(date +%s.%N)
      "$bin/mobility-sim" play "$work/traffic.jsonl" --broker "mqtt://127.0.0.1:$port" --speed max >/dev/null 2>&1
      wait "$sub"; end=$(date +%s.%N)
      python3 -c "t=$end-$start; print(f'round $round, broker ceiling: {t:.2f} s, {$messages/t:,.0f} messages/s')"
      kill "$broker"; wait "$broker" 2>/dev/null || true
      continue
    fi
    rm -rf "$work/state"
    dbin=$bin; [ $mode = before ] && dbin=$BEFORE
    "$dbin/mobilityd" --broker "mqtt://127.0.0.1:$port" --rules rules --state "$work/state" --clock event --publish-series "$( [ $mode = off ] && echo false || echo true )" \
      --metrics-address "127.0.0.1:$mport" --log-level warn >"$work/mobilityd.log" 2>&1 & daemon=$!; pids+=($daemon)
    for _ in $(seq 200); do [ "$(metric mobilityd_broker_subscribed)" = 1 ] && break; sleep 0.05; done
    start=$(date +%s.%N)
    "$bin/mobility-sim" play "$work/traffic.jsonl" --broker "mqtt://127.0.0.1:$port" --speed max >/dev/null 2>&1
    while :; do
      got=$(metric mobilityd_messages_received_total); left=$(metric mobilityd_outputs_unacknowledged)
      [ "${got%.*}" -ge "$messages" ] && [ "${left%.*}" = 0 ] && break
      sleep 0.02
    done
    end=$(date +%s.%N)
    series=$(metric mobilityd_series_published_total)
    python3 -c "import sys; t=$end-$start; print(f'round $round, series ${mode/before/on, before}: {t:.2f} s, {$messages/t:,.0f} messages/s, {$samples/t:,.0f} samples/s; series messages published: ${series%.*}')"
    kill "$daemon"; wait "$daemon" 2>/dev/null || true
    kill "$broker"; wait "$broker" 2>/dev/null || true
  done
done
