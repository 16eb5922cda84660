#!/usr/bin/env bash
# "A day on the ward" (docs/care-staff.md), for real: a private mosquitto on a free loopback port,
# mobilityd with two care teams, the report listener (a team token) and the FHIR feed; Jamie's
# plateau story (team physio-north) and a normal recovery (team gait-lab) played through the
# broker; then what the physio-north staff do: see what fires, acknowledge it, silence a patient,
# record a fall and correct its date, read the audit trail, open the weekly report, export FHIR.
# Stops everything it started.
#
#   BIN=.build/debug bash scripts/ward-day.sh     # default: a release build in .build/release
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${BIN:-}" ]; then swift build -c release >/dev/null; BIN=.build/release; fi
work=$(mktemp -d /tmp/mobilitywatch-ward.XXXXXX)
chmod 700 "$work"
pids=()
cleanup() { for ((k=${#pids[@]}-1; k>=0; k--)); do kill "${pids[k]}" 2>/dev/null || true; wait "${pids[k]}" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT INT TERM
# A free loopback port below the kernel's ephemeral range (an outgoing connection can take one
# from that range before the server given it binds it), as the test harness picks them.
freeport() {
  python3 - <<'PY'
import random, socket
try:
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except (OSError, ValueError, IndexError):
    low = 32768
for p in [random.SystemRandom().randrange(10000, low) for _ in range(200)] + [0] if low > 12000 else [0]:
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p)); print(s.getsockname()[1]); break
    except OSError:
        pass
    finally:
        s.close()
PY
}
step() { printf '\n== %s\n' "$*"; }

port=$(freeport); http=$(freeport)
printf 'listener %s 127.0.0.1\nallow_anonymous true\n%s\n' "$port" "$( [ "$(id -u)" = 0 ] && echo "user root" )" > "$work/mosquitto.conf"
"$(command -v mosquitto || echo /usr/sbin/mosquitto)" -c "$work/mosquitto.conf" >"$work/mosquitto.log" 2>&1 & pids+=($!)
for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/"$port") 2>/dev/null && break; sleep 0.1; done
broker=mqtt://127.0.0.1:$port

# The operator's files: which team each patient is in, and the physio-north team's token.
printf 'jamie-plateau physio-north\njamie-normal gait-lab\n' > "$work/care-teams"
token=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
printf 'physio-north-ward:%s teams=physio-north\n' "$token" > "$work/http-tokens"
chmod 600 "$work/care-teams" "$work/http-tokens"

"$BIN/mobilityd" --broker "$broker" --rules rules --state "$work/state" --clock event \
  --care-teams "$work/care-teams" --http-address "127.0.0.1:$http" --http-tokens "$work/http-tokens" \
  --fhir on --metrics-address off --log-level warn & pids+=($!)
for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/"$http") 2>/dev/null && break; sleep 0.1; done

step "the night: 90 days of two patients' phones and watches arrive (mobility-sim play)"
for s in jamie-plateau jamie-normal; do "$BIN/mobility-sim" play --builtin "$s" --broker "$broker" --speed max; done
# The daemon has committed everything once its retained commit acknowledgements name the last samples.
for _ in $(seq 300); do
  n=$(timeout 2 mosquitto_sub -h 127.0.0.1 -p "$port" -t 'mobility/v1/users/+/acks' -W 1 2>/dev/null | wc -l || true)
  [ "$n" -ge 2 ] && break; sleep 0.2
done

step "08:00 — what is firing for physio-north (mobilityctl alerts --team physio-north)"
"$BIN/mobilityctl" alerts --broker "$broker" --team physio-north
id=$("$BIN/mobilityctl" alerts --broker "$broker" --team physio-north --rule stalled_recovery --output json |
  python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["id"])')

step "08:05 — nurse Kim takes it (mobilityctl ack)"
"$BIN/mobilityctl" ack --broker "$broker" --team physio-north --user jamie-plateau --alert "$id" \
  --by nurse.kim --note "called Jamie, physio appointment Tuesday"
"$BIN/mobilityctl" alerts --broker "$broker" --team physio-north --rule stalled_recovery

step "08:10 — another team's patient is not ours: the command is refused with a reason"
"$BIN/mobilityctl" ack --broker "$broker" --team physio-north --user jamie-normal --alert 00000000deadbeef --by nurse.kim 2>&1 || echo "(exit $?)"

step "09:00 — Jamie is in hospital for two days: quiet for this patient (mobilityctl silence add)"
sid=$("$BIN/mobilityctl" silence add --broker "$broker" --team physio-north user=jamie-plateau \
  --duration 2d --comment "inpatient until Thursday" --author dr.lee)
echo "silence $sid"
"$BIN/mobilityctl" silence query --broker "$broker" --team physio-north

step "10:30 — Jamie fell at home: nurse Kim records it, then corrects the date (mobilityctl event)"
"$BIN/mobilityctl" event add --broker "$broker" --team physio-north --user jamie-plateau --kind fall --date 2026-03-20 \
  --id fall-1 --note "tripped on the stairs at home" --by nurse.kim
"$BIN/mobilityctl" event correct --broker "$broker" --team physio-north --user jamie-plateau --id fall-1 --kind fall \
  --date 2026-03-19 --note "tripped on the stairs at home" --comment "his daughter says Thursday" --by nurse.kim
"$BIN/mobilityctl" event add --broker "$broker" --team physio-north --user jamie-plateau --kind illness \
  --start 2026-03-10 --end 2026-03-12 --id flu-1 --by dr.lee
"$BIN/mobilityctl" event retract --broker "$broker" --team physio-north --user jamie-plateau --id flu-1 \
  --comment "entered for the wrong patient" --by dr.lee
"$BIN/mobilityctl" event add --broker "$broker" --team physio-north --user jamie-normal --kind fall --date 2026-03-20 \
  --by nurse.kim 2>&1 || echo "(exit $?)"
curl -s -H "Authorization: Bearer $token" "http://127.0.0.1:$http/api/v1/users/jamie-plateau/events" > "$work/events.json"
python3 - "$work/events.json" <<'PY'
import json, sys
print("GET /api/v1/users/jamie-plateau/events:")
for e in json.load(open(sys.argv[1]))["data"]["events"]:
    who = e.get("entered")
    print(f'  {e["kind"]} {e["first"]}' + (f' entered by {who["by"]} ({who["team"]})' if who else " (from the phone)"))
PY

step "12:00 — the audit trail (mobilityctl audit)"
"$BIN/mobilityctl" audit --state "$work/state"

step "14:00 — Jamie's weekly report and recovery panel, with the team's token"
curl -s -o "$work/report.html" -w 'GET /users/jamie-plateau/report: %{http_code}, %{size_download} bytes of HTML\n' \
  -H "Authorization: Bearer $token" "http://127.0.0.1:$http/users/jamie-plateau/report"
curl -s -o /dev/null -w 'GET /users/jamie-plateau/panel: %{http_code}\n' -H "Authorization: Bearer $token" "http://127.0.0.1:$http/users/jamie-plateau/panel"
curl -s -o /dev/null -w 'GET /users/jamie-normal/panel (gait-lab'"'"'s patient): %{http_code}\n' \
  -H "Authorization: Bearer $token" "http://127.0.0.1:$http/users/jamie-normal/panel"

step "16:00 — the hospital's EHR takes Jamie's alerts and daily values (mobilityctl fhir export)"
"$BIN/mobilityctl" fhir export --state "$work/state" --user jamie-plateau -o "$work/jamie.fhir.json"
python3 - "$work/jamie.fhir.json" <<'PY'
import collections, json, sys
b = json.load(open(sys.argv[1]))
kinds = collections.Counter(e["resource"]["resourceType"] for e in b["entry"])
flags = [e["resource"] for e in b["entry"] if e["resource"]["resourceType"] == "Flag"]
print(f'Bundle ({b["type"]}): Flag {kinds["Flag"]}, Observation {kinds["Observation"]}')
for f in flags: print(f'  Flag {f["code"]["coding"][0]["code"]}: {f["status"]}, from {f["period"]["start"]}')
PY

step "17:00 — done; everything this script started is stopped"
