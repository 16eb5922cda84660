#!/usr/bin/env bash
# The two partitioned intakes side by side on the same traffic (docs/scaling.md "Measured"), not
# a test: `--intake mqtt` (an MQTT session per partition on NATS's MQTT listener, which needs
# mqtt { max_ack_pending: 1, ack_wait: "2s" }) and `--intake jetstream` (a JetStream pull consumer
# per partition, NATS's MQTT defaults). For each: a fresh one-node NATS (JetStream, MQTT, the
# mapping of the four input kinds into P partitions), a fresh database on one private PostgreSQL
# (fsync and synchronous_commit on), N `mobilityd --partitions P`; waits until the instances hold
# all P leases with every partition's input ready, plays one recorded population (mobility-sim
# play, QoS 1, as fast as the broker takes it) and waits until every message is committed (the
# partitions' inputs acknowledged: nothing left pending at the broker). Prints the throughput, the
# messages the instances applied (their mobilityd_messages_received_total: all of them) and
# the CPU per message of the instances, of nats-server and of PostgreSQL (utime+stime from
# /proc) and their sum, the machine's load, and PostgreSQL's transactions per message (its
# pg_stat_database count: commits, the heartbeats' and reads included), for the JetStream
# intake the messages per committed batch, and mobilityd's state commits per message (its
# mobilityd_state_commits_total, read before the stop), and before the traffic, what one instance
# and PostgreSQL spend a second with nothing to consume (`idle_ms/s`, mobilityd+PostgreSQL per
# instance, over IDLE seconds, 10 by default): on a shared 2-core machine these bound nothing
# but themselves. NODES=3 runs each intake on a three-node cluster (stream_replicas: 3, the
# instances spread over the nodes, nats-server's CPU summed over the three). The intake
# `mosquitto` is the single-node daemon for comparison: one mobilityd (no --partitions, its
# SQLite store) on a private mosquitto, done when it has received every message; its broker's
# CPU is in the nats-server column. PGSTATS=1 loads pg_stat_statements and prints, after each
# row, the statements that cost PostgreSQL most (calls, planning and execution ms). The intake `jetstream-nats` is the JetStream intake fed by a
# gateway that publishes to the stream over the NATS protocol instead of MQTT
# (scripts/bench-nats-publish.py, PyPI's nats-py; JetStream's acknowledgement for the PUBACK).
# MOBILITYD_ARGS adds arguments to every partitioned instance. RATE=N publishes N messages a
# second (mobility-sim play --rate) instead of as fast as the broker takes them: the same
# offered load for every row, below what any of them can take, so that the CPU per message
# compares configurations at one rate rather than each at its own saturation (MQTT gateways
# only). Everything it starts is stopped by PID.
#   scripts/bench-intake.sh     USERS=50 DAYS=20 SAMPLES=20 P=8 INSTANCES=1 NODES=1 BUILD=release [RATE=N] [IDLE=S] INTAKES="mqtt jetstream mosquitto jetstream-nats jetstream+users"
set -euo pipefail
cd "$(dirname "$0")/.."
users=${USERS:-50}
days=${DAYS:-20}
samples=${SAMPLES:-20}
parts=${P:-8}
n=${INSTANCES:-1}
build=${BUILD:-release}
intakes=${INTAKES:-mqtt jetstream}
nodes=${NODES:-1}
lease=${LEASE:-4}
idle=${IDLE:-10}
pace=(--speed max); [ -n "${RATE:-}" ] && pace=(--rate "$RATE")
# More arguments for every partitioned instance (MOBILITYD_ARGS="--commit-interval 250").
read -r -a extra <<< "${MOBILITYD_ARGS:-}"
swift build -c "$build" --product mobilityd >/dev/null
swift build -c "$build" --product mobility-sim >/dev/null
bin=$PWD/.build/$build
work=$(mktemp -d /tmp/mw-intake.XXXXXX)
# shellcheck source=scripts/bench-postgres-lib.sh
. scripts/bench-postgres-lib.sh  # (from the repository root) a durable PostgreSQL in $work/pg, CPU ticks, cleanup

"$bin/mobility-sim" population --users "$users" --days "$days" --samples-per-message "$samples" -o "$work/traffic.jsonl" >/dev/null
messages=$(wc -l <"$work/traffic.jsonl")
# An intake named with `+users` (`jetstream+users`): the gateways publish each user's traffic on
# a connection of its own, as phones do (the brokers here take any login), instead of every
# user's on one connection.
(umask 077; for u in $(seq 0 $((users - 1))); do echo "u$u x"; done >"$work/gateways")
echo "== $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) before; $messages messages ($users users x $days days, $samples samples a message), P=$parts, $n instance(s), $nodes NATS node(s), --lease $lease, $build build"
printf '%-15s %8s %8s %8s %17s %12s %16s %14s %6s %12s %8s %12s %14s\n' intake msg/s wall_s applied mobilityd_ms/msg nats_ms/msg postgres_ms/msg total_ms/msg load pg_xacts/msg msg/batch commits/msg idle_ms/s
for intake in $intakes; do
  label=$intake tag=${intake//[-+]/_}
  gateway_options=()
  if [ "$intake" = jetstream-nats+users ]; then echo "jetstream-nats publishes on one NATS connection; +users does not apply" >&2; exit 2; fi
  if [ "${intake%+users}" != "$intake" ]; then
    gateway_options=(--credentials "$work/gateways" --mqtt-version 3.1.1)
    intake=${intake%+users}
  fi
  if [ "$intake" = mosquitto ]; then
    mq=$(free_port); mp=$(free_port)
    printf 'listener %s 127.0.0.1\nallow_anonymous true\nmax_queued_messages 0\nmax_inflight_messages 0\n%s\n' "$mq" "$( [ "$(id -u)" = 0 ] && echo 'user root')" >"$work/m-$tag.conf"
    /usr/sbin/mosquitto -c "$work/m-$tag.conf" >"$work/mosquitto-$tag.log" 2>&1 &
    mqpid=$!; pids+=("$mqpid")
    for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/"$mq") 2>/dev/null && break; sleep 0.1; done
    "$bin/mobilityd" --broker "mqtt://127.0.0.1:$mq" --rules rules --state "$work/state-$tag" --clock event \
      --metrics-address "127.0.0.1:$mp" --publish-series false --log-level info >"$work/mw-$tag.log" 2>&1 &
    d=$!; pids+=("$d")
    metric() { curl -s "http://127.0.0.1:$mp/metrics" | awk -v m="$1" '$1 == m || index($1, m "{") == 1 {s += $2} END {printf "%d", s + 0}'; }
    received() { metric mobilityd_messages_received_total; }
    for _ in $(seq 300); do [ "$(metric mobilityd_broker_subscribed)" -ge 1 ] && break; sleep 0.1; done
    before=$(ticks "$d"); nb=$(ticks "$mqpid")
    t0=$(date +%s.%N)
    "$bin/mobility-sim" play "$work/traffic.jsonl" --broker "mqtt://127.0.0.1:$mq" "${pace[@]}" "${gateway_options[@]}" >/dev/null
    # Done when every message is received, applied and committed (nothing queued, no output uncommitted).
    for _ in $(seq 36000); do
      [ "$(received)" -ge "$messages" ] && [ "$(metric mobilityd_queue_depth)" = 0 ] && [ "$(metric mobilityd_outputs_uncommitted)" = 0 ] && break
      sleep 0.05
    done
    t1=$(date +%s.%N)
    after=$(ticks "$d"); na=$(ticks "$mqpid")
    awk -v applied="$(received)" -v m="$messages" -v t0="$t0" -v t1="$t1" -v c="$((after - before))" -v nc="$((na - nb))" -v hz="$hz" \
      -v load="$(cut -d' ' -f1 /proc/loadavg)" -v label="$label" \
      -v sc="$(metric mobilityd_state_commits_total)" \
      'BEGIN { w = t1 - t0; printf "%-15s %8.0f %8.1f %8d %17.3f %12.3f %16s %14.3f %6s %12s %8s %12.4f %14s\n", label, m / w, w, applied, c * 1000 / hz / m, nc * 1000 / hz / m, "-", (c + nc) * 1000 / hz / m, load, "-", "-", sc / m, "-" }'
    kill -TERM "$d" 2>/dev/null || true; wait "$d" 2>/dev/null || true
    kill -TERM "$mqpid" 2>/dev/null || true; wait "$mqpid" 2>/dev/null || true
    continue
  fi
  db=intake_$tag
  psql_ postgres -c "CREATE DATABASE $db"
  cports=(); mports=(); hports=(); rports=(); natspids=()
  for j in $(seq "$nodes"); do cports+=("$(free_port)"); mports+=("$(free_port)"); hports+=("$(free_port)"); rports+=("$(free_port)"); done
  for j in $(seq 0 $((nodes - 1))); do
    nd=$work/nats-$tag-$j; mkdir -p "$nd"
    {
      echo "server_name: s-$tag-$j"; echo "listen: 127.0.0.1:${cports[$j]}"; echo "http: 127.0.0.1:${hports[$j]}"; echo "jetstream { store_dir: \"$nd/js\" }"
      if [ "$nodes" -gt 1 ]; then
        echo "cluster { name: bench-$tag, listen: 127.0.0.1:${rports[$j]}, routes: ["
        for r in "${rports[@]}"; do echo "  nats-route://127.0.0.1:$r"; done
        echo "] }"
      fi
      if [ "$intake" = mqtt ]; then
        echo "mqtt { listen: 127.0.0.1:${mports[$j]}, stream_replicas: $nodes, max_ack_pending: 1, ack_wait: \"2s\" }"  # required by MQTT sessions (deploy/nats-node.conf)
      else
        echo "mqtt { listen: 127.0.0.1:${mports[$j]}, stream_replicas: $nodes }"  # NATS's consumer defaults
      fi
      echo "mappings = {"
      for k in samples events deletions profile; do
        echo "  \"mobility.v1.users.*.$k\": \"part.{{partition($parts,1)}}.mobility.v1.users.{{wildcard(1)}}.$k\""
        # A gateway publishing to the stream's subjects directly is mapped the same way.
        [ "$intake" = jetstream-nats ] && echo "  \"\$MQTT.msgs.mobility.v1.users.*.$k\": \"\$MQTT.msgs.part.{{partition($parts,1)}}.mobility.v1.users.{{wildcard(1)}}.$k\""
      done
      echo "}"
    } >"$nd/n.conf"
    /usr/sbin/nats-server -c "$nd/n.conf" >"$nd/log" 2>&1 &
    natspids+=($!); pids+=($!)
  done
  for j in $(seq 0 $((nodes - 1))); do
    # The MQTT listener opens once JetStream is up (mobilityd waits for a fit broker itself).
    for _ in $(seq 600); do (echo >/dev/tcp/127.0.0.1/"${mports[$j]}") 2>/dev/null && break; sleep 0.1; done
  done
  nats_ticks() { local t=0; for q in "${natspids[@]}"; do t=$((t + $(ticks "$q"))); done; echo "$t"; }
  mport=${mports[0]}; hport=${hports[0]}
  inst=(); metrics=()
  for i in $(seq "$n"); do
    mp=$(free_port); metrics+=("$mp"); j=$(((i - 1) % nodes))
    "$bin/mobilityd" --broker "mqtt://127.0.0.1:${mports[$j]}" --rules rules --state "$work/state-$tag-$i" --clock event --instance "i$i" \
      --metrics-address "127.0.0.1:$mp" --publish-series false --log-level info \
      --store "postgres://mw@127.0.0.1:$pgport/$db" --partitions "$parts" --lease "$lease" --nats "nats://127.0.0.1:${cports[$j]}" \
      --intake "${intake%-nats}" "${extra[@]}" >"$work/mw-$tag-$i.log" 2>&1 &
    inst+=($!); pids+=($!)
  done
  ready='partition session subscribed'; [ "$intake" != mqtt ] && ready='partition consumer ready'
  for _ in $(seq 600); do
    q=$(psql_ "$db" -c "SELECT count(*) || ' ' || count(DISTINCT owner) FROM partitions WHERE lease_until > now()" 2>/dev/null || true)
    got=0; for i in $(seq "$n"); do got=$((got + $(cat "$work/mw-$tag-$i.log" 2>/dev/null | grep -c "$ready" || true))); done
    [ "$q" = "$parts $n" ] && [ "$got" -ge "$parts" ] && break
    sleep 0.1
  done
  sleep $((lease)) # one more lease: no rebalance under way (not a test)
  # What the instances and PostgreSQL spend with nothing to consume, per instance and second.
  ib=0; for p in "${inst[@]}"; do ib=$((ib + $(ticks "$p"))); done
  ipb=$(pg_ticks); i0=$(date +%s.%N)
  sleep "$idle"
  ia=0; for p in "${inst[@]}"; do ia=$((ia + $(ticks "$p"))); done
  ipa=$(pg_ticks); i1=$(date +%s.%N)
  before=0; for p in "${inst[@]}"; do before=$((before + $(ticks "$p"))); done
  nb=$(nats_ticks); pb=$(pg_ticks)
  xacts() { psql_ "$db" -c "SELECT xact_commit FROM pg_stat_database WHERE datname = '$db'"; }
  [ "${PGSTATS:-0}" = 1 ] && psql_ "$db" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()" >/dev/null
  xb=$(xacts)
  t0=$(date +%s.%N)
  if [ "$intake" = jetstream-nats ]; then
    python3 scripts/bench-nats-publish.py "$work/traffic.jsonl" "nats://127.0.0.1:${cports[0]}"
  else
    "$bin/mobility-sim" play "$work/traffic.jsonl" --broker "mqtt://127.0.0.1:$mport" "${pace[@]}" "${gateway_options[@]}" >/dev/null
  fi
  # Done when every message is committed. The MQTT sessions: when `$MQTT_msgs` holds nothing
  # (interest retention: a message leaves once every consumer that wants it acknowledged it).
  # The JetStream intake: when the partitions' consumers hold nothing undelivered or
  # unacknowledged, each as its leader counts it (a follower's count lags; with three replicas
  # the stream may keep outputs no consumer of ours wants). The publisher has returned by then,
  # so every message is in the stream.
  left() {
    for j in $(seq 0 $((nodes - 1))); do
      curl -s "http://127.0.0.1:${hports[$j]}/jsz?accounts=true&streams=true&consumers=true" | python3 -c '
import json, sys
intake, me = sys.argv[1], sys.argv[2]
d = json.load(sys.stdin)
left = 0
for a in d.get("account_details", []):
    for s in a.get("stream_detail", []):
        if s["name"] != "$MQTT_msgs": continue
        if intake == "mqtt":
            left += s["state"]["messages"]
            continue
        for c in s.get("consumer_detail") or []:
            leader = (c.get("cluster") or {}).get("leader")
            if c["name"].startswith("mobilityd-part-") and leader in (None, me):
                left += c["num_pending"] + c["num_ack_pending"]
print(left)' "$intake" "s-$tag-$j" 2>/dev/null || echo 1
      [ "$intake" = mqtt ] && break  # one node's count of the stream is enough
    done | awk '{s += $1} END {print s + 0}'
  }
  for _ in $(seq 36000); do
    [ "$(left)" = 0 ] && break
    sleep 0.05
  done
  t1=$(date +%s.%N)
  after=0; for p in "${inst[@]}"; do after=$((after + $(ticks "$p"))); done
  na=$(nats_ticks); pa=$(pg_ticks)
  applied=0 batches=0 commits=0
  for mp in "${metrics[@]}"; do
    v=$(curl -s "http://127.0.0.1:$mp/metrics" | awk '/^mobilityd_messages_received_total/ {s += $2} END {print s + 0}' || true)
    applied=$((applied + ${v%.*}))
    v=$(curl -s "http://127.0.0.1:$mp/metrics" | awk '/^mobilityd_jetstream_batches_total/ {s += $2} END {print s + 0}' || true)
    batches=$((batches + ${v%.*}))
    v=$(curl -s "http://127.0.0.1:$mp/metrics" | awk '/^mobilityd_state_commits_total/ {s += $2} END {print s + 0}' || true)
    commits=$((commits + ${v%.*}))
  done
  for p in "${inst[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${inst[@]}"; do wait "$p" 2>/dev/null || true; done
  # A backend reports its transactions to pg_stat_database when it exits (while it runs, up to
  # 10 s late): counted once the instances' connections are gone (their stop's few included).
  for _ in $(seq 200); do [ "$(psql_ "$db" -c "SELECT count(*) FROM pg_stat_activity WHERE datname = '$db' AND pid <> pg_backend_pid()")" = 0 ] && break; sleep 0.05; done
  xa=$(xacts)
  awk -v applied="$applied" -v intake="$label" -v m="$messages" -v t0="$t0" -v t1="$t1" -v c="$((after - before))" -v nc="$((na - nb))" -v pc="$((pa - pb))" -v hz="$hz" \
    -v load="$(cut -d' ' -f1 /proc/loadavg)" -v x="$((xa - xb))" -v b="$batches" -v sc="$commits" \
    -v ic="$((ia - ib))" -v ipc="$((ipa - ipb))" -v iw="$(awk -v a="$i0" -v b="$i1" 'BEGIN { print b - a }')" -v n="$n" \
    'BEGIN { w = t1 - t0; printf "%-15s %8.0f %8.1f %8d %17.3f %12.3f %16.3f %14.3f %6s %12.3f %8s %12.4f %14s\n", intake, m / w, w, applied, c * 1000 / hz / m, nc * 1000 / hz / m, pc * 1000 / hz / m, (c + nc + pc) * 1000 / hz / m, load, x / m, b ? sprintf("%.1f", m / b) : "-", sc / m, sprintf("%.1f+%.1f", ic * 1000 / hz / iw / n, ipc * 1000 / hz / iw / n) }'
  if [ "${PGSTATS:-0}" = 1 ]; then
    # What each statement cost over the traffic (and the stop): calls, planning and execution.
    psql_ "$db" -F ' | ' -c "SELECT calls, round(total_plan_time::numeric, 1) AS plan_ms, round(total_exec_time::numeric, 1) AS exec_ms,
      regexp_replace(left(query, 90), '\s+', ' ', 'g') FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '$db')
      ORDER BY total_plan_time + total_exec_time DESC LIMIT 14" | sed 's/^/    /'
  fi
  for q in "${natspids[@]}"; do kill -TERM "$q" 2>/dev/null || true; wait "$q" 2>/dev/null || true; done
done
