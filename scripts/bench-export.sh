#!/usr/bin/env bash
# What `mobilityctl export` costs on a cohort's state (not part of CI; figures in
# docs/research-export.md). A labelled cohort is played through a private mosquitto into
# mobilityd --clock event (durable state, default history); then, with mobilityd still running,
# the state is exported to CSV (time, peak memory, size) and read back with pandas (time, rows).
#   scripts/bench-export.sh [USERS] [DAYS] [BUILD]     # BUILD: release (default) or debug
set -euo pipefail
cd "$(dirname "$0")/.."
users=${1:-1000}; days=${2:-90}; config=${3:-release}
bash scripts/install-deps.sh >/dev/null
swift build -c "$config" >/dev/null
bin=$PWD/.build/$config
python="${MOBILITYWATCH_RESEARCH_VENV:-$HOME/.cache/mobilitywatch/research-venv}/bin/python"
work=$(mktemp -d /tmp/mw-bench-export.XXXXXX)
cleanup() { kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
"$bin/mobility-sim" population --users "$users" --days "$days" --seed 7 -o "$work/traffic.jsonl" 2>/dev/null
messages=$(wc -l < "$work/traffic.jsonl")
port=$(free_port); mport=$(free_port)
printf 'listener %s 127.0.0.1\nallow_anonymous true\nmax_queued_messages 0\nmax_inflight_messages 0\n%s\n' "$port" "$( [ "$(id -u)" = 0 ] && echo 'user root')" > "$work/m.conf"
mosquitto -c "$work/m.conf" >/dev/null 2>&1 & broker=$!
metric() { curl -s "http://127.0.0.1:$mport/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
until python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null; do sleep 0.1; done
"$bin/mobilityd" --broker mqtt://127.0.0.1:$port --rules rules --state "$work/state" --clock event \
  --metrics-address 127.0.0.1:$mport --log-level warn >"$work/mobilityd.log" 2>&1 & daemon=$!
until [ "$(metric mobilityd_broker_subscribed)" = 1 ]; do sleep 0.1; done
"$bin/mobility-sim" play "$work/traffic.jsonl" --broker mqtt://127.0.0.1:$port --speed max 2>/dev/null
until [ "$(metric mobilityd_messages_received_total)" = "$messages" ] && [ "$(metric mobilityd_outputs_unacknowledged)" = 0 ]; do sleep 0.05; done
state=$(du -sk "$work/state" | cut -f1)
echo "== $(nproc) cores, $config build; $users users x $days days, $messages messages; state $((state / 1024)) MiB; mobilityd running"
/usr/bin/time -f '%e s wall, %M KB peak' "$bin/mobilityctl" export --state "$work/state" --format csv -o "$work/cohort.csv"
echo "CSV: $(stat -c %s "$work/cohort.csv") bytes, $(($(wc -l < "$work/cohort.csv") - 1)) rows"
"$python" - "$work/cohort.csv" <<'EOF'
import sys, time
import pandas as pd
t = time.perf_counter()
df = pd.read_csv(sys.argv[1], parse_dates=["day"], dtype={"user": "string"})
print(f"pandas read_csv: {time.perf_counter() - t:.2f} s, {len(df)} rows x {len(df.columns)} columns, {df.user.nunique()} users")
EOF
kill -TERM $daemon; wait $daemon || true
kill -TERM $broker; wait $broker 2>/dev/null || true
