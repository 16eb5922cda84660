# Sourced by the benchmarks that run mobilityd on PostgreSQL (bench-intake.sh, bench-scale.sh),
# with `work` set to a directory of their own: starts a durable PostgreSQL 15 in $work/pg on a
# free loopback port (`pgport`, `pgpid`; as the postgres user when run as root) and defines
# free_port, ticks (a process's CPU clock ticks), pg_ticks (the postmaster's and its backends'),
# `hz` and psql_. Everything in `pids`, PostgreSQL and $work go on exit.
pgbin=/usr/lib/postgresql/15/bin
chmod 0711 "$work"  # the postgres user traverses it to its own directory
pids=()
pgpid=
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  [ -n "$pgpid" ] && kill -INT "$pgpid" 2>/dev/null && wait "$pgpid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }  # utime + stime, in clock ticks
pg_ticks() { local t; t=$(ticks "$pgpid"); for p in $(ps -o pid= --ppid "$pgpid"); do t=$((t + $(ticks "$p"))); done; echo "$t"; }  # the postmaster and its backends
hz=$(getconf CLK_TCK)

# PostgreSQL, durable.
mkdir -p "$work/pg"
as_pg() { if [ "$(id -u)" = 0 ]; then chown -R postgres "$work/pg"; setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; else "$@"; fi; }
as_pg "$pgbin/initdb" -D "$work/pg/data" -A trust -U mw -E UTF8 --locale=C >/dev/null
pgport=$(free_port)
run_as=(); [ "$(id -u)" = 0 ] && run_as=(setpriv --reuid=postgres --regid=postgres --init-groups --)
# PGSTATS=1: pg_stat_statements, planning included, for a script to print what the statements cost.
pg_stats=(); [ "${PGSTATS:-0}" = 1 ] && pg_stats=(-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all -c pg_stat_statements.track_planning=on)
"${run_as[@]}" "$pgbin/postgres" -D "$work/pg/data" -k "$work/pg" -p "$pgport" -c listen_addresses=127.0.0.1 -c max_connections=200 "${pg_stats[@]}" >"$work/pg/log" 2>&1 &
pgpid=$!
for _ in $(seq 100); do "$pgbin/pg_isready" -q -h 127.0.0.1 -p "$pgport" && break; sleep 0.1; done
psql_() { "$pgbin/psql" -X -q -A -t -h 127.0.0.1 -p "$pgport" -U mw -d "$@"; }
