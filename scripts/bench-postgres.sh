#!/usr/bin/env bash
# PostgreSQL commit cost per batch against SQLite's (docs/benchmarks.md, "State store"; docs/scaling.md "Measured").
# Starts a private PostgreSQL 15 (fsync and synchronous_commit on, as in production) on a free
# loopback port in a temporary directory, runs `mobility-bench store-commits` against it and
# SQLite, and stops the server by its PID. BUILD=debug skips the release build.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
build=${BUILD:-release}
swift build -c "$build" --product mobility-bench >/dev/null
bin=/usr/lib/postgresql/15/bin
dir=$(mktemp -d /tmp/mw-pgbench.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
as_pg() { if [ "$(id -u)" = 0 ]; then chown -R postgres "$dir"; setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; else "$@"; fi; }
as_pg "$bin/initdb" -D "$dir/data" -A trust -U mw -E UTF8 --locale=C >/dev/null
run_as=(); [ "$(id -u)" = 0 ] && run_as=(setpriv --reuid=postgres --regid=postgres --init-groups --)
"${run_as[@]}" "$bin/postgres" -D "$dir/data" -k "$dir" -p "$port" -c listen_addresses=127.0.0.1 >"$dir/log" 2>&1 &
pid=$!  # setpriv execs: this is the postmaster's PID
trap 'kill -INT $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" && break; sleep 0.1; done
"$bin/psql" -X -q -h 127.0.0.1 -p "$port" -U mw -d postgres -c "CREATE DATABASE bench"
url="postgres://mw@127.0.0.1:$port/bench"
echo "== PostgreSQL synchronous_commit=on (a commit waits for its WAL fsync)"
".build/$build/mobility-bench" store-commits --postgres "$url" "$@"
"$bin/psql" -X -q -h 127.0.0.1 -p "$port" -U mw -d postgres -c "DROP DATABASE bench" -c "CREATE DATABASE bench"
echo "== PostgreSQL synchronous_commit=off (as SQLite's synchronous=NORMAL: no fsync per commit)"
".build/$build/mobility-bench" store-commits --postgres "$url?options=-c%20synchronous_commit%3Doff" "$@"
