#ifndef MOBILITYWATCH_CMICROHTTPD_SHIM_H
#define MOBILITYWATCH_CMICROHTTPD_SHIM_H
/* libmicrohttpd (Debian libmicrohttpd-dev). MHD_start_daemon is variadic, which Swift cannot
   call, so these inline helpers start a daemon bound to an explicit address and read back where. */
#include <stdarg.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <microhttpd.h>

/* libmicrohttpd's messages (mostly a client that closed or misbehaved) to stderr, at most 10 a
   minute and then one line saying how many were left out: a flood of slow or broken clients
   makes a line per connection, which must not flood the daemon's log. Called on libmicrohttpd's
   thread. */
static void mw_mhd_log(void *cls, const char *format, va_list ap) {
    static time_t window = 0;
    static unsigned int written = 0, dropped = 0;
    (void)cls;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - window >= 60) {
        if (dropped > 0) fprintf(stderr, "libmicrohttpd: %u more messages in the last minute left out\n", dropped);
        window = now.tv_sec;
        written = 0;
        dropped = 0;
    }
    if (written >= 10) { dropped++; return; }
    written++;
    vfprintf(stderr, format, ap);
}

/* Its own thread with epoll (poll where epoll is missing), never select(2), whose FD_SETSIZE
   (1 024) made every connection past the 1 023rd descriptor fail; at most `connection_limit`
   connections at once (further ones wait in the listen backlog), each closed after `timeout_seconds` without
   activity and given a `memory_limit`-byte pool (which also bounds a request's line and headers:
   MHD answers 414/431 itself past it). `notify` (with `context`) hears each connection open and
   close: what bounds how long a request may take to arrive (HTTPEndpoint's ConnectionGuard). With
   `cert_pem` and `key_pem` (PEM text, NULL for plain HTTP) it speaks TLS 1.2 or 1.3 only (GnuTLS
   priorities). */
static inline struct MHD_Daemon *mw_mhd_start_tls(const struct sockaddr *addr, MHD_AccessHandlerCallback handler, void *context,
                                                  unsigned int connection_limit, unsigned int timeout_seconds, size_t memory_limit,
                                                  const char *cert_pem, const char *key_pem, MHD_RequestCompletedCallback completed,
                                                  MHD_NotifyConnectionCallback notify) {
    unsigned int flags = MHD_USE_ERROR_LOG | (MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES
                                              ? MHD_USE_EPOLL_INTERNAL_THREAD : MHD_USE_POLL_INTERNAL_THREAD);
    struct MHD_OptionItem options[] = {
        /* First: libmicrohttpd warns on stderr (through its own logger) about a logger given later. */
        { MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mw_mhd_log, NULL },
        { MHD_OPTION_SOCK_ADDR, 0, (void *)addr },
        { MHD_OPTION_CONNECTION_LIMIT, connection_limit, NULL },
        { MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds, NULL },
        { MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)memory_limit, NULL },
        /* Called when a request ends, answered or not: frees what the handler kept for it (a body). */
        { MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, context },
        { MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)notify, context },
        { MHD_OPTION_END, 0, NULL }, { MHD_OPTION_END, 0, NULL }, { MHD_OPTION_END, 0, NULL },
        { MHD_OPTION_END, 0, NULL },
    };
    if (cert_pem != NULL && key_pem != NULL) {
        flags |= MHD_USE_TLS;
        options[7] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)cert_pem };
        options[8] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)key_pem };
        options[9] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0,
                                              (void *)"NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2" };
    }
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, context, MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

/* Whether a connection notification says the connection opened (else it closed). */
static inline int mw_mhd_connection_opened(enum MHD_ConnectionNotificationCode code) { return code == MHD_CONNECTION_NOTIFY_STARTED; }

/* The connection's socket, or -1. */
static inline int mw_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? (int)info->connect_fd : -1;
}

/* What the connection-notify callback stored for the connection (its `socket_context`), or NULL. */
static inline void *mw_mhd_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

/* Whether this libmicrohttpd was built with TLS (Debian's is, with GnuTLS). */
static inline int mw_mhd_has_tls(void) { return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES; }

/* A request header's value (e.g. "Authorization"), or NULL. */
static inline const char *mw_mhd_header(struct MHD_Connection *connection, const char *name) {
    return MHD_lookup_connection_value(connection, MHD_HEADER_KIND, name);
}

/* Calls `iterator` for each query argument (already percent-decoded); returns their count. */
static inline int mw_mhd_query_arguments(struct MHD_Connection *connection, MHD_KeyValueIterator iterator, void *context) {
    return MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, iterator, context);
}

/* The peer's IPv4 address as 4 bytes in network order into `out`; 0 when it is not IPv4. */
static inline int mw_mhd_peer_ipv4(struct MHD_Connection *connection, uint8_t out[4]) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL || info->client_addr->sa_family != AF_INET) return 0;
    const struct sockaddr_in *sin = (const struct sockaddr_in *)info->client_addr;
    const uint8_t *b = (const uint8_t *)&sin->sin_addr.s_addr;
    out[0] = b[0]; out[1] = b[1]; out[2] = b[2]; out[3] = b[3];
    return 1;
}

static inline struct MHD_Response *mw_mhd_response_copy(size_t size, const void *buffer) {
    /* MUST_COPY: libmicrohttpd copies the bytes and never writes through the pointer. */
    return MHD_create_response_from_buffer(size, (void *)buffer, MHD_RESPMEM_MUST_COPY);
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
