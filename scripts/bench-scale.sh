#!/usr/bin/env bash
# Partitioned mobilityd at 1, 2 and 4 instances (docs/scaling.md "Measured"), not a test.
# For each instance count: a fresh one-node NATS (JetStream, MQTT, the mapping of the four input
# kinds into P partitions), a fresh database on one private PostgreSQL (fsync and
# synchronous_commit on, as in production), N `mobilityd --partitions P --intake mqtt` (the MQTT
# sessions; scripts/bench-intake.sh sets the intakes side by side) on loopback; waits until
# the N instances hold all P leases, plays a recorded population (mobility-sim play, QoS 1, as fast
# as the broker takes it) and waits until the instances have received every message. Prints the
# throughput, and the CPU per message of the instances, of nats-server and of PostgreSQL
# (utime+stime from /proc), and the machine's load: on a shared 2-core machine these bound
# nothing but themselves. Everything it starts is stopped by PID.
#   scripts/bench-scale.sh                 USERS=200 DAYS=30 P=8 INSTANCES="1 2 4" BUILD=release
set -euo pipefail
cd "$(dirname "$0")/.."
users=${USERS:-200}
days=${DAYS:-30}
parts=${P:-8}
counts=${INSTANCES:-1 2 4}
build=${BUILD:-release}
lease=${LEASE:-4}
swift build -c "$build" --product mobilityd >/dev/null
swift build -c "$build" --product mobility-sim >/dev/null
bin=$PWD/.build/$build
work=$(mktemp -d /tmp/mw-scale.XXXXXX)
# shellcheck source=scripts/bench-postgres-lib.sh
. scripts/bench-postgres-lib.sh  # (from the repository root) a durable PostgreSQL in $work/pg, CPU ticks, cleanup

"$bin/mobility-sim" population --users "$users" --days "$days" --samples-per-message 1 -o "$work/traffic.jsonl" >/dev/null
messages=$(wc -l <"$work/traffic.jsonl")
echo "== $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) before; $messages messages ($users users x $days days, 1 sample a message), P=$parts, --lease $lease, $build build"
printf '%-10s %8s %8s %17s %12s %16s %13s %6s\n' instances msg/s wall_s mobilityd_ms/msg nats_ms/msg postgres_ms/msg db_bytes/user load
for n in $counts; do
  db=scale_$n
  psql_ postgres -c "CREATE DATABASE $db"
  # NATS, one node, fresh store.
  nd=$work/nats$n; mkdir -p "$nd"
  cport=$(free_port); mport=$(free_port)
  {
    echo "server_name: s$n"; echo "listen: 127.0.0.1:$cport"; echo "jetstream { store_dir: \"$nd/js\" }"
    echo "mqtt { listen: 127.0.0.1:$mport, max_ack_pending: 1, ack_wait: \"2s\" }"   # required (deploy/nats-node.conf)
    echo "mappings = {"
    for k in samples events deletions profile; do
      echo "  \"mobility.v1.users.*.$k\": \"part.{{partition($parts,1)}}.mobility.v1.users.{{wildcard(1)}}.$k\""
    done
    echo "}"
  } >"$nd/n.conf"
  /usr/sbin/nats-server -c "$nd/n.conf" >"$nd/log" 2>&1 &
  natspid=$!; pids+=("$natspid")
  for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/"$mport") 2>/dev/null && break; sleep 0.1; done
  inst=(); metrics=()
  for i in $(seq "$n"); do
    mp=$(free_port); metrics+=("$mp")
    "$bin/mobilityd" --broker "mqtt://127.0.0.1:$mport" --rules rules --state "$work/state-$n-$i" --clock event --instance "i$i" \
      --metrics-address "127.0.0.1:$mp" --publish-series false --log-level info \
      --store "postgres://mw@127.0.0.1:$pgport/$db" --partitions "$parts" --lease "$lease" --nats "nats://127.0.0.1:$cport" --intake mqtt >"$work/mw-$n-$i.log" 2>&1 &
    inst+=($!); pids+=($!)
  done
  # Settled: all P leases live, held by the N instances, each session subscribed.
  for _ in $(seq 600); do
    q=$(psql_ "$db" -c "SELECT count(*) || ' ' || count(DISTINCT owner) FROM partitions WHERE lease_until > now()" 2>/dev/null || true)
    subs=0; for i in $(seq "$n"); do subs=$((subs + $(grep -c 'partition session subscribed' "$work/mw-$n-$i.log" || true))); done
    [ "$q" = "$parts $n" ] && [ "$subs" -ge "$parts" ] && break
    sleep 0.1
  done
  sleep $((lease)) # one more lease: no rebalance under way (not a test)
  before=0; for p in "${inst[@]}"; do before=$((before + $(ticks "$p"))); done
  nb=$(ticks "$natspid"); pb=$(pg_ticks)
  t0=$(date +%s.%N)
  "$bin/mobility-sim" play "$work/traffic.jsonl" --broker "mqtt://127.0.0.1:$mport" >/dev/null
  while :; do
    got=0
    for mp in "${metrics[@]}"; do
      v=$(curl -s "http://127.0.0.1:$mp/metrics" | awk '/^mobilityd_messages_received_total/ {s += $2} END {print s + 0}')
      got=$((got + ${v%.*}))
    done
    [ "$got" -ge "$messages" ] && break
    sleep 0.05
  done
  t1=$(date +%s.%N)
  after=0; for p in "${inst[@]}"; do after=$((after + $(ticks "$p"))); done
  na=$(ticks "$natspid"); pa=$(pg_ticks)
  dbsize=$(psql_ "$db" -c "SELECT pg_database_size(current_database()) - (SELECT pg_database_size('template1'))")
  awk -v n="$n" -v m="$messages" -v db="$dbsize" -v u="$users" -v t0="$t0" -v t1="$t1" -v c="$((after - before))" -v nc="$((na - nb))" -v pc="$((pa - pb))" -v hz="$hz" \
    -v load="$(cut -d' ' -f1 /proc/loadavg)" \
    'BEGIN { w = t1 - t0; printf "%-10s %8.0f %8.1f %17.3f %12.3f %16.3f %13.0f %6s\n", n, m / w, w, c * 1000 / hz / m, nc * 1000 / hz / m, pc * 1000 / hz / m, db / u, load }'
  for p in "${inst[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${inst[@]}"; do wait "$p" 2>/dev/null || true; done
  kill -TERM "$natspid" 2>/dev/null || true; wait "$natspid" 2>/dev/null || true
done
