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
pkg-config --exists libdeflate 2>/dev/null || need+=(libdeflate-dev)  # the ingest journal's CRC-32 (carry-less multiply)
pkg-config --exists simdjson 2>/dev/null || need+=(libsimdjson-dev)   # the samples decoder (C++)
pkg-config --exists libsystemd 2>/dev/null || need+=(libsystemd-dev)  # sd_notify: readiness and the watchdog
pkg-config --exists libcrypto 2>/dev/null || need+=(libssl-dev)    # the console's staff passwords (PBKDF2) and session ids
pkg-config --exists libpq 2>/dev/null || need+=(libpq-dev)          # the PostgreSQL state backend (--store postgres://)
pkg-config --exists libnats 2>/dev/null || need+=(libnats-dev)      # --partitions: the start check of NATS JetStream's settings
[ -x /usr/lib/postgresql/15/bin/postgres ] || need+=(postgresql-15)  # the tests start a private PostgreSQL server
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)        # the unit test runs systemd-analyze verify/security
command -v chromium-headless-shell >/dev/null 2>&1 || need+=(chromium-headless-shell)  # the care-report pages rendered to PNG (tests, render-reports.sh); the console walked in a browser (DevTools protocol)
command -v python3 >/dev/null 2>&1 || need+=(python3)            # the FHIR tests' independent validator (PyPI, below)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
[ -f /usr/share/i18n/locales/de_DE ] || need+=(locales)        # the research export is tested in a German locale (below)
[ -x /usr/bin/time ] || need+=(time)                              # scripts/bench-replay.sh: CPU time of each contestant
command -v valgrind >/dev/null 2>&1 || need+=(valgrind)          # scripts/bench-callgrind.sh: instructions a message
if [ ${#need[@]} -gt 0 ]; then
  echo "install-deps: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  sudo_() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
  sudo_ apt-get update -qq
  sudo_ apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
command -v swift >/dev/null 2>&1 || { echo "install-deps: swift is not on the PATH (Swift 6 toolchain required)" >&2; exit 1; }
# The FHIR tests validate our output with fhir.resources (FHIR R4 4.0.1 models; 6.4.0 is the last
# release whose default package is R4, and it needs pydantic 1), in a private venv. Tests find it
# at MOBILITYWATCH_FHIR_VENV or this default.
venv="${MOBILITYWATCH_FHIR_VENV:-$HOME/.cache/mobilitywatch/fhir-venv}"
if ! "$venv/bin/python" -c 'import fhir.resources, sys; sys.exit(fhir.resources.__fhir_version__ != "4.0.1")' >/dev/null 2>&1; then
  echo "install-deps: installing the FHIR validator (fhir.resources 6.4.0) into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "fhir.resources==6.4.0" "pydantic[email]>=1.10,<2"
fi
# The research export's test reads the CSV back with pandas, in a private venv (tests find it at
# MOBILITYWATCH_RESEARCH_VENV or this default), and runs the export in a German locale (decimal
# comma), which Debian's locales package builds.
venv="${MOBILITYWATCH_RESEARCH_VENV:-$HOME/.cache/mobilitywatch/research-venv}"
if ! "$venv/bin/python" -c 'import pandas' >/dev/null 2>&1; then
  echo "install-deps: installing pandas into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "pandas==2.2.3"
fi
if ! locale -a 2>/dev/null | grep -qx 'de_DE.utf8'; then
  if [ "$(id -u)" = 0 ]; then localedef -i de_DE -c -f UTF-8 de_DE.UTF-8; else sudo localedef -i de_DE -c -f UTF-8 de_DE.UTF-8; fi
fi
