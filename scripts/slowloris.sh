#!/usr/bin/env bash
# Slowloris against mobilityd's report listener, briefly: a private mosquitto on a free loopback
# port, mobilityd with the report listener on 127.0.0.1 and a token, then scripts/slowloris.py
# (attackers from 127.0.0.2 and up, a token holder's GET /api/v1/status every second from
# 127.0.0.1). Prints the attack's figures (docs/security.md, "Slowloris"); extra arguments go to
# slowloris.py. Stops everything it started.
#
#   BIN=.build/debug bash scripts/slowloris.sh --connections 2200 --interval 8 --duration 30 --sources 1
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then swift build -c release >/dev/null; BIN=.build/release; fi
work=$(mktemp -d /tmp/mobilitywatch-slowloris.XXXXXX)
chmod 700 "$work"
pids=()
cleanup() { for ((k=${#pids[@]}-1; k>=0; k--)); do kill "${pids[k]}" 2>/dev/null || true; wait "${pids[k]}" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT INT TERM
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

port=$(freeport); http=$(freeport)
printf 'listener %s 127.0.0.1\nallow_anonymous true\n%s\n' "$port" "$( [ "$(id -u)" = 0 ] && echo "user root" )" > "$work/mosquitto.conf"
"$(command -v mosquitto || echo /usr/sbin/mosquitto)" -c "$work/mosquitto.conf" >"$work/mosquitto.log" 2>&1 & pids+=($!)
for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/"$port") 2>/dev/null && break; sleep 0.1; done

token=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
printf 'operator:%s\n' "$token" > "$work/http-tokens"
chmod 600 "$work/http-tokens"
"$BIN/mobilityd" --broker "mqtt://127.0.0.1:$port" --rules rules --state "$work/state" --clock event \
  --http-address "127.0.0.1:$http" --http-tokens "$work/http-tokens" --metrics-address off --log-level warn & pids+=($!)
for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/"$http") 2>/dev/null && break; sleep 0.1; done

python3 scripts/slowloris.py --target "127.0.0.1:$http" --path /api/v1/status --token "$token" "$@"
