#ifndef MOBILITYWATCH_CMICROHTTPD_SHIM_H
#define MOBILITYWATCH_CMICROHTTPD_SHIM_H
/* libmicrohttpd (Debian libmicrohttpd-dev). MHD_start_daemon is variadic, which Swift cannot
   call, so this one inline helper starts a daemon bound to an explicit address. */
#include <stdint.h>
#include <stddef.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <microhttpd.h>

static inline struct MHD_Daemon *mw_mhd_start(const struct sockaddr *addr, MHD_AccessHandlerCallback handler, void *context) {
    return MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL, handler, context,
                            MHD_OPTION_SOCK_ADDR, addr, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10, MHD_OPTION_END);
}

static inline struct MHD_Response *mw_mhd_response_copy(size_t size, void *buffer) {
    return MHD_create_response_from_buffer(size, buffer, MHD_RESPMEM_MUST_COPY);
}

static inline uint16_t mw_mhd_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}
#endif
