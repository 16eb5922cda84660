#ifndef MOBILITYWATCH_CMICROHTTPD_SHIM_H
#define MOBILITYWATCH_CMICROHTTPD_SHIM_H
/* libmicrohttpd (Debian libmicrohttpd-dev). MHD_start_daemon is variadic, which Swift cannot
   call, so these inline helpers start a daemon bound to an explicit address and read back where. */
#include <stdint.h>
#include <stddef.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <microhttpd.h>

/* Its own thread with epoll (poll where epoll is missing), never select(2), whose FD_SETSIZE
   (1 024) made every connection past the 1 023rd descriptor fail; at most `connection_limit`
   connections at once (further ones wait in the listen backlog), each closed after
   `timeout_seconds` without activity and given a `memory_limit`-byte pool. */
static inline struct MHD_Daemon *mw_mhd_start(const struct sockaddr *addr, MHD_AccessHandlerCallback handler, void *context,
                                              unsigned int connection_limit, unsigned int timeout_seconds, size_t memory_limit) {
    unsigned int flags = MHD_USE_ERROR_LOG | (MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES
                                              ? MHD_USE_EPOLL_INTERNAL_THREAD : MHD_USE_POLL_INTERNAL_THREAD);
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, context,
                            MHD_OPTION_SOCK_ADDR, addr,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
                            MHD_OPTION_END);
}

static inline struct MHD_Response *mw_mhd_response_copy(size_t size, void *buffer) {
    return MHD_create_response_from_buffer(size, buffer, MHD_RESPMEM_MUST_COPY);
}

/* The listening socket's descriptor, or -1. */
static inline int mw_mhd_listen_fd(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_LISTEN_FD);
    return info ? (int)info->listen_fd : -1;
}

/* The number of open connections. */
static inline unsigned int mw_mhd_connections(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info ? info->num_connections : 0;
}

static inline uint16_t mw_mhd_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}
#endif
