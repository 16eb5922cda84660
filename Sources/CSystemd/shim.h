#ifndef MOBILITYWATCH_CSYSTEMD_SHIM_H
#define MOBILITYWATCH_CSYSTEMD_SHIM_H
/* libsystemd (Debian libsystemd-dev): sd_notify(3) and sd_watchdog_enabled(3), the service
   manager's readiness, reload, stop and watchdog protocol. Both are no-ops without NOTIFY_SOCKET. */
#include <stdint.h>
#include <systemd/sd-daemon.h>
#endif
