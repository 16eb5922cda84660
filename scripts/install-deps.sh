#!/usr/bin/env bash
# Installs the Debian packages MobilityWatch needs, only where missing. Idempotent.
set -euo pipefail
need=()
command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || need+=(mosquitto)
command -v mosquitto_pub >/dev/null 2>&1 || need+=(mosquitto-clients)
[ -x /usr/sbin/nats-server ] || need+=(nats-server)              # a broker that speaks MQTT 3.1.1 only (tests)
command -v openssl >/dev/null 2>&1 || need+=(openssl)          # the TLS test mints a throwaway CA
command -v tmux >/dev/null 2>&1 || need+=(tmux)                # mobilityctl alerts is tested in a terminal, as a person uses it
command -v curl >/dev/null 2>&1 || need+=(curl)                # the HTTPS tests use a real client
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
pkg-config --exists libmosquitto 2>/dev/null || need+=(libmosquitto-dev)
pkg-config --exists sqlite3 2>/dev/null || need+=(libsqlite3-dev)
pkg-config --exists libmicrohttpd 2>/dev/null || need+=(libmicrohttpd-dev)
pkg-config --exists libxml-2.0 2>/dev/null || need+=(libxml2-dev)
pkg-config --exists zlib 2>/dev/null || need+=(zlib1g-dev)
pkg-config --exists simdjson 2>/dev/null || need+=(libsimdjson-dev)   # the samples decoder (C++)
pkg-config --exists libsystemd 2>/dev/null || need+=(libsystemd-dev)  # sd_notify: readiness and the watchdog
pkg-config --exists libpq 2>/dev/null || need+=(libpq-dev)          # the PostgreSQL state backend (--store postgres://)
[ -x /usr/lib/postgresql/15/bin/postgres ] || need+=(postgresql-15)  # the tests start a private PostgreSQL server
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)        # the unit test runs systemd-analyze verify/security
command -v chromium-headless-shell >/dev/null 2>&1 || need+=(chromium-headless-shell)  # the care-report pages rendered to PNG (tests, render-reports.sh)
if [ ${#need[@]} -gt 0 ]; then
  echo "install-deps: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  sudo_() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
  sudo_ apt-get update -qq
  sudo_ apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
command -v swift >/dev/null 2>&1 || { echo "install-deps: swift is not on the PATH (Swift 6 toolchain required)" >&2; exit 1; }
