#!/usr/bin/env bash
# The partitioned deployment's fault run, repeated (docs/scaling.md "Measured"), not a test of
# the suite's size: `ClusterFaultRunTests` — three `mobilityd --intake jetstream` on a three-node
# NATS cluster (stream_replicas: 3, every consumer setting NATS's default, the shipped
# deploy/nats-node.conf with ports, paths and secrets substituted), a durable PostgreSQL, a
# gateway on every node re-sending what the acknowledgements do not cover; kill -9 of an
# instance at 25 %, SIGHUP of another at 40 %, kill -9 of a live instance's node at 60 % (back
# once its partitions moved, or lost for good with its gateway moved), PostgreSQL stopped at
# 80 % until the leases lapse, then started — on a larger cohort, RUNS times, each with its own
# seed. Prints each run's line and the tally; exits 1 if any run failed (its output kept in
# the work directory, with every instance's whole log; KEEP=1 keeps them after a clean tally too).
# mobilityd is the release build unless PRODUCTS=debug.
#   scripts/fault-run.sh        RUNS=10 USERS=100 DAYS=90 SECONDS_=120 SEED=1 PRODUCTS=release
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-10}
users=${USERS:-100}
days=${DAYS:-90}
pace=${SECONDS_:-120}
seed=${SEED:-1}
swift build --build-tests >/dev/null
swift build -c "${PRODUCTS:-release}" --product mobilityd >/dev/null
work=$(mktemp -d /tmp/mw-fault-run.XXXXXX)
# An instance that crashes prints its threads' backtraces into its log (the crashed thread's
# registers only, the images its stacks name); every instance's whole log goes to the work
# directory (seed-S-node-returns|lost-instance-N.log).
export SWIFT_BACKTRACE=${SWIFT_BACKTRACE:-enable=yes,interactive=no,threads=all,registers=crashed,images=mentioned}
export MW_FAULT_LOGS=$work
echo "== $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $runs runs of $users users x $days days, published over $pace s; output in $work"
passed=0
for i in $(seq "$runs"); do
  s=$((seed + i - 1))
  out=$work/run-$i.log
  if MW_PRODUCTS=${PRODUCTS:-release} MW_FAULT_USERS=$users MW_FAULT_DAYS=$days MW_FAULT_SECONDS=$pace MW_FAULT_SEED=$s \
    swift test --skip-build --no-parallel --filter ClusterFaultRunTests >"$out" 2>&1; then
    passed=$((passed + 1)); verdict=passed
  else
    verdict=FAILED
  fi
  echo "run $i (seed $s): $verdict, load $(cut -d' ' -f1 /proc/loadavg)"
  grep -h 'cluster fault run' "$out" | sed 's/^/  /' || true
done
echo "== $passed of $runs runs passed (each: the node returning, then lost for good)"
[ "$passed" = "$runs" ] && [ -z "${KEEP:-}" ] && rm -rf "$work"
[ "$passed" = "$runs" ]
