#!/usr/bin/env bash
# The two-minute demo: installs what is missing, builds, starts a private mosquitto on a free
# loopback port and mobilityd with rules/, plays Jamie's recovery stories through the broker and
# shows the alerts as care staff would receive them; stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
swift build -c release >/dev/null
bin=.build/release
work=$(mktemp -d /tmp/mobilitywatch-demo.XXXXXX)
pids=()
cleanup() { for ((k=${#pids[@]}-1; k>=0; k--)); do kill "${pids[k]}" 2>/dev/null || true; sleep 0.2; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT INT TERM

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 18883)
cat > "$work/mosquitto.conf" <<CONF
listener $port 127.0.0.1
allow_anonymous true
max_queued_messages 0
$( [ "$(id -u)" = 0 ] && echo "user root" )
CONF
mosquitto=$(command -v mosquitto || echo /usr/sbin/mosquitto)
"$mosquitto" -c "$work/mosquitto.conf" >"$work/mosquitto.log" 2>&1 & pids+=($!)
for _ in $(seq 50); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
broker=mqtt://127.0.0.1:$port
echo "== mosquitto on $broker"

"$bin/mobilityd" --broker "$broker" --rules rules --state "$work/state" --clock event --publish-series false \
  --metrics-address off --log-level warn & pids+=($!)
sleep 1
echo "== mobilityd running (clock: event); subscribing to mobility/v1/users/+/alerts/#"
# mosquitto_sub itself is the background job (its output formatted by a process substitution
# that ends with it), so that cleanup stops it rather than the last stage of a pipeline.
mosquitto_sub -h 127.0.0.1 -p "$port" -q 1 -t 'mobility/v1/users/+/alerts/#' -F '%p' > >(
  sed -u 's/"status":"firing"\(.*"repeat":true\)/"status":"still firing (weekly reminder)"\1/' | \
  sed -un 's/.*"rule":"\([^"]*\)".*"user":"\([^"]*\)".*"status":"\([^"]*\)","day":"\([^"]*\)".*"headline":"\([^"]*\)".*/  [\4] \2 \1 \3: \5/p') & pids+=($!)
sleep 0.5

for s in jamie-normal jamie-heat-wave jamie-plateau; do
  echo "== playing $s (90 days of HealthKit samples)"
  "$bin/mobility-sim" play --builtin "$s" --broker "$broker" --speed max
  sleep 1
done
echo "== done: the normal recovery and the heat wave raise no stall; the plateau does."
