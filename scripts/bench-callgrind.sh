#!/usr/bin/env bash
# Instructions a message of mobilityd (not part of CI): bench-e2e.sh's first leg (1 sample a message,
# 1000 users, samples within the last hour on the wall clock, so no day closes) played into a mobilityd
# run under callgrind, through a private mosquitto on loopback. Counters are zeroed once the daemon is
# subscribed and dumped once every sample is accepted and committed, so start-up and shutdown are not
# counted. Instruction counts, unlike wall time, compare builds on a loaded machine.
#   scripts/bench-callgrind.sh [MESSAGES] [OUT]        (default 30000, callgrind.out.leg1)
#   MOBILITYD=PATH scripts/bench-callgrind.sh …          another build's mobilityd, the same traffic and player
#   MOBILITYD_ARGS="--commit-interval 6000 --ack-interval 15000"  extra options (intervals scaled by valgrind's slowdown: docs/benchmarks-history.md)
#   NATIVE=1 scripts/bench-callgrind.sh …               no valgrind: how the same run batches natively (batches, commits)
#   RULES=DIR scripts/bench-callgrind.sh …              another rule pack (default rules/; an older build needs its own)
#   TRAFFIC=FILE scripts/bench-callgrind.sh - OUT        recorded traffic instead ({"topic","payload"} lines, e.g. mobility-sim
#                                                       population --sync-days 3 --samples-per-message 50), into mobilityd --clock event
#   RECORD=FILE scripts/bench-callgrind.sh …             also writes what the daemon published (mosquitto_sub -v '#', sorted) to FILE,
#                                                       to compare two builds' outputs (diff; acks and status differ with timing)
# Then: callgrind_annotate --inclusive=yes OUT | head -80
set -euo pipefail
cd "$(dirname "$0")/.."
messages=${1:-30000}
[ "$messages" = - ] && messages=30000
out=$(realpath -m "${2:-callgrind.out.leg1}")
bash scripts/install-deps.sh  # valgrind among them
swift build -c release --product mobility-sim >/dev/null
bin=$PWD/.build/release
[ -n "${MOBILITYD:-}" ] || swift build -c release --product mobilityd >/dev/null
daemon_bin=${MOBILITYD:-$bin/mobilityd}
work=$(mktemp -d /tmp/mw-callgrind.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port); mport=$(free_port)
clock=wall
if [ -n "${TRAFFIC:-}" ]; then
  cp "$TRAFFIC" "$work/leg1.jsonl"; messages=$(wc -l <"$work/leg1.jsonl"); clock=event
else
# bench-e2e's leg 1: user b{i % 1000}, one walkingSpeed sample a message, i % 3600 seconds before now.
python3 - "$messages" >"$work/leg1.jsonl" <<'EOF'
import json, sys, time, datetime
n = int(sys.argv[1]); wall = int(time.time() * 1000)
def ts(ms):
    d = datetime.datetime.fromtimestamp(ms // 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return d + (".%03d" % (ms % 1000) if ms % 1000 else "") + "Z"
for i in range(n):
    t = ts(wall - (i % 3600) * 1000)
    p = '{"id":"e%d-1-%d-0","type":"walkingSpeed","value":1.2,"unit":"m/s","start":"%s","end":"%s","source":{"bundleId":"com.apple.health.b"}}' % (wall, i, t, t)
    print(json.dumps({"topic": "mobility/v1/users/b%d/samples" % (i % 1000), "payload": json.loads(p)}, separators=(",", ":")))
EOF
fi
printf 'listener %s 127.0.0.1\nallow_anonymous true\nmax_queued_messages 0\nmax_inflight_messages 0\n%s\n' "$port" "$( [ "$(id -u)" = 0 ] && echo 'user root')" >"$work/m.conf"
mosquitto -c "$work/m.conf" >/dev/null 2>&1 &
pids+=($!)
sleep 0.3
if [ -n "${RECORD:-}" ]; then
  mosquitto_sub -h 127.0.0.1 -p "$port" -v -t '#' >"$work/published.txt" 2>/dev/null &
  pids+=($!)
fi
metric() { curl -s "http://127.0.0.1:$mport/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
vg=(valgrind --tool=callgrind --callgrind-out-file="$out")
[ "${NATIVE:-0}" = 1 ] && vg=()
"${vg[@]}" "$daemon_bin" --broker mqtt://127.0.0.1:$port --rules "${RULES:-rules}" --state "$work/state" \
  --clock $clock ${MOBILITYD_ARGS:-} --metrics-address 127.0.0.1:$mport --log-level warn >"$work/mobilityd.log" 2>&1 &
daemon=$!
pids+=($daemon)
sub='mobilityd_broker_connected{role="subscriber"}'  # (builds before the subscribed gauge have this one)
for _ in $(seq 600); do [ "$(metric "$sub")" = 1 ] && break; kill -0 "$daemon" 2>/dev/null || break; sleep 0.2; done
[ "$(metric "$sub")" = 1 ] || { echo "mobilityd did not connect"; grep -v '^==' "$work/mobilityd.log" | head; exit 1; }
sleep 2  # its subscription (on_connect), slow under valgrind
[ "${NATIVE:-0}" = 1 ] || callgrind_control -z "$daemon" >/dev/null
b0=$(metric mobilityd_evaluation_seconds_count)
t0=$(date +%s.%N)
"$bin/mobility-sim" play "$work/leg1.jsonl" --broker mqtt://127.0.0.1:$port --speed max >/dev/null
for _ in $(seq 1200); do
  a=$(metric mobilityd_samples_accepted_total); u=$(metric mobilityd_outputs_uncommitted)
  [ -n "${TRAFFIC:-}" ] && a=$(metric mobilityd_messages_received_total)
  d=$(metric mobilityd_weekly_reports_due)  # the report workers' weeks (builds before them: none)
  [ "${a%.*}" -ge "$messages" ] 2>/dev/null && [ "${u:-0}" = 0 ] && [ "${d:-0}" = 0 ] && break
  sleep 0.5  # each poll renders /metrics in the measured process
done
t1=$(date +%s.%N)
# The commit of the last interval's users (--commit-interval after the last batch) is counted too.
c0=$(metric mobilityd_state_commits_total)
for _ in $(seq 600); do [ "$(metric mobilityd_state_commits_total)" != "$c0" ] && break; sleep 0.1; done
sleep 0.5
echo "weekly reports $(metric mobilityd_weekly_reports_total); accepted $(metric mobilityd_samples_accepted_total) samples of $messages messages in $(python3 -c "print(round($t1 - $t0, 1))") s; $(metric mobilityd_state_commits_total) commits, $(python3 -c "print(int($(metric mobilityd_evaluation_seconds_count) - $b0))") batches"
if [ "${NATIVE:-0}" = 1 ]; then [ -n "${RECORD:-}" ] && sort "$work/published.txt" >"$RECORD"; exit 0; fi
callgrind_control -d "$daemon" >/dev/null
sleep 1
kill "$daemon"; wait "$daemon" 2>/dev/null || true
[ -n "${RECORD:-}" ] && sort "$work/published.txt" >"$RECORD"
latest=$(ls -t "$out"* | grep -v "^$out$" | head -1 || true)
[ -n "$latest" ] && mv "$latest" "$out.messages"
echo "profile of the $messages messages: $out.messages (the whole run: $out)"
callgrind_annotate --inclusive=yes "$out.messages" 2>/dev/null | sed -n '1,30p' | grep -E 'PROGRAM TOTALS|Ir' | head -3
