import CMicroHTTPD
import Glibc

/// Why the HTTP server could not start.
package struct HTTPServerError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure.
    package enum Code: Hashable, Sendable {
        /// The address is not `HOST:PORT` with an IPv4 literal.
        case badAddress
        /// Binding or listening failed (the address is in use, not local, …).
        case cannotListen
        /// TLS could not start: this libmicrohttpd has no TLS, or the certificate or key is bad.
        case tls
    }

    /// What kind of failure.
    package var code: Code
    /// What went wrong, for the log.
    package var message: String
    /// The message.
    package var description: String { message }

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}

/// A small HTTP server on libmicrohttpd's own thread (epoll): `/metrics` and `/healthz`, and the
/// report listener's routes (``HTTPRouter``), optionally over TLS.
///
/// Bounded: at most `connectionLimit` connections at once (more wait in the listen backlog) and
/// `connectionsPerAddress` from one IP address (past it a new one closes the address's
/// longest-waiting one), each closed after
/// `idleTimeoutSeconds` without activity, or when its request has not arrived whole within
/// `requestDeadlineSeconds` however its bytes trickle; near the limit a new connection closes the
/// one that has waited longest for its request (``ConnectionGuard``). A small per-connection pool
/// (16 KiB) bounds a request's line and headers. So idle or slow clients (slowloris) can neither
/// exhaust the process's descriptors nor keep a token holder's request or a health check out. A `POST`'s body is collected up to
/// ``maxBodyBytes`` (past that the request says ``HTTPRequest/bodyOverflow`` and the rest is
/// discarded); other methods' bodies are discarded.
///
/// Sendability: `daemon` is only passed to libmicrohttpd (stopped once, in `stop`); the responder
/// and the access log are `@Sendable` and called from libmicrohttpd's thread.
package final class HTTPServer: @unchecked Sendable {
    /// A server certificate (chain) and its private key, as PEM text.
    package struct TLS: Sendable {
        /// The certificate, then any intermediates, PEM.
        package var certificatePEM: String
        /// The private key, PEM (unencrypted).
        package var keyPEM: String
        /// Creates TLS settings.
        package init(certificatePEM: String, keyPEM: String) {
            self.certificatePEM = certificatePEM
            self.keyPEM = keyPEM
        }
    }

    /// Answers a request: the response, and the access-log record (nil: not logged).
    package typealias Responder = @Sendable (HTTPRequest) -> (HTTPResponse, HTTPAccessRecord?)

    nonisolated(unsafe) private var daemon: OpaquePointer?
    private let responder: Responder
    /// The request deadline and the room for new connections.
    let connectionGuard: ConnectionGuard
    private let accessLog: (@Sendable (HTTPAccessRecord) -> Void)?
    /// The PEM texts handed to libmicrohttpd, kept until it stops (then wiped).
    nonisolated(unsafe) private var pem: (cert: UnsafeMutablePointer<CChar>, key: UnsafeMutablePointer<CChar>)?
    /// Whether the server speaks TLS.
    package let isTLS: Bool
    /// The bound port (useful when asked for port 0).
    package private(set) var port: UInt16 = 0
    /// The bound address as `HOST:PORT`, read back from the listening socket.
    package private(set) var boundAddress = ""

    /// The default bound on simultaneous connections.
    package static let defaultConnectionLimit = 2048
    /// The default bound on simultaneous connections from one IP address.
    package static let defaultConnectionsPerAddress = 64
    /// The default time a request may take to arrive whole (line, headers, body), in seconds.
    package static let defaultRequestDeadlineSeconds = 10.0
    /// The most query parameters collected per request (more set ``HTTPRequest/queryOverflow``).
    package static let maxQueryParameters = 64
    /// The longest `POST` body collected (bytes); a longer one sets ``HTTPRequest/bodyOverflow``.
    package static let maxBodyBytes = 16 * 1024

    /// What the server keeps of one `POST` request between libmicrohttpd's calls (the connection's
    /// `con_cls`, released when the request completes).
    final class Upload {
        var bytes: [UInt8] = []
        var overflow = false
    }
    /// The `con_cls` of a request whose body is discarded (not a pointer to anything).
    static var discarding: UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: 1)! }

    /// Whether this libmicrohttpd was built with TLS.
    package static var supportsTLS: Bool { mw_mhd_has_tls() != 0 }

    /// Starts a plain-HTTP, GET-only server that hands `handler` the method and path (other
    /// methods get 405). For `/metrics` and `/healthz`; nothing is access-logged.
    package convenience init(
        address: String, connectionLimit: Int = HTTPServer.defaultConnectionLimit, idleTimeoutSeconds: Int = 10,
        handler: @escaping @Sendable (String, String) -> HTTPResponse
    ) throws(HTTPServerError) {
        try self.init(
            address: address, connectionLimit: connectionLimit, idleTimeoutSeconds: idleTimeoutSeconds,
            responder: { request in
                let r =
                    request.method == "GET" || request.method == "HEAD"
                    ? handler(request.method, request.path)
                    : HTTPResponse(status: 405, body: "method not allowed\n")
                return (r, nil)
            })
    }

    /// Starts a server for `router` (with TLS when `tls` is given) that hands each exchange's
    /// record to `accessLog`.
    package convenience init(
        address: String, tls: TLS? = nil, connectionLimit: Int = HTTPServer.defaultConnectionLimit, idleTimeoutSeconds: Int = 10,
        router: HTTPRouter, accessLog: (@Sendable (HTTPAccessRecord) -> Void)? = nil
    ) throws(HTTPServerError) {
        try self.init(
            address: address, tls: tls, connectionLimit: connectionLimit, idleTimeoutSeconds: idleTimeoutSeconds,
            responder: { request in
                let (r, a) = router.respond(to: request); return (r, a)
            }, accessLog: accessLog)
    }

    /// Starts listening on `host:port` (IPv4 literal; use 127.0.0.1 for loopback only).
    package init(
        address: String, tls: TLS? = nil, connectionLimit: Int = HTTPServer.defaultConnectionLimit,
        connectionsPerAddress: Int = HTTPServer.defaultConnectionsPerAddress, idleTimeoutSeconds: Int = 10,
        requestDeadlineSeconds: Double = HTTPServer.defaultRequestDeadlineSeconds, responder: @escaping Responder,
        accessLog: (@Sendable (HTTPAccessRecord) -> Void)? = nil
    ) throws(HTTPServerError) {
        self.responder = responder
        connectionGuard = ConnectionGuard(
            requestDeadline: requestDeadlineSeconds, connectionLimit: max(1, connectionLimit), perAddress: connectionsPerAddress)
        self.accessLog = accessLog
        self.isTLS = tls != nil
        guard let colon = address.lastIndex(of: ":"), let p = UInt16(address[address.index(after: colon)...]) else {
            throw HTTPServerError(.badAddress, "address '\(address)' must be HOST:PORT")
        }
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = p.bigEndian
        guard inet_pton(AF_INET, String(address[..<colon]), &sin.sin_addr) == 1 else {
            throw HTTPServerError(.badAddress, "address '\(address)' needs an IPv4 literal host such as 127.0.0.1")
        }
        if let tls {
            guard HTTPServer.supportsTLS else { throw HTTPServerError(.tls, "this libmicrohttpd was built without TLS") }
            pem = (strdup(tls.certificatePEM), strdup(tls.keyPEM))
        }
        let me = Unmanaged.passUnretained(self).toOpaque()
        errno = 0
        let d = withUnsafePointer(to: &sin) { ptr in
            ptr.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                mw_mhd_start_tls(
                    sa,
                    { cls, conn, url, method, _, uploadData, uploadSize, conCls in
                        guard let cls, let conn, let url, let method, let conCls else { return .NO }
                        // The first call per request only sets up state (a POST's body buffer);
                        // the calls with upload data collect it; answer on the last.
                        guard let state = conCls.pointee else {
                            conCls.pointee =
                                strcmp(method, "POST") == 0 ? Unmanaged.passRetained(Upload()).toOpaque() : HTTPServer.discarding
                            return .YES
                        }
                        if let uploadSize, uploadSize.pointee != 0 {
                            if state != HTTPServer.discarding, let uploadData {
                                let upload = Unmanaged<Upload>.fromOpaque(state).takeUnretainedValue()
                                if upload.bytes.count + uploadSize.pointee <= HTTPServer.maxBodyBytes {
                                    upload.bytes += UnsafeRawBufferPointer(start: uploadData, count: uploadSize.pointee)
                                } else {
                                    upload.overflow = true
                                }
                            }
                            uploadSize.pointee = 0
                            return .YES
                        }
                        let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
                        if let id = mw_mhd_socket_context(conn) { server.connectionGuard.requestArrived(Int(bitPattern: id)) }
                        let upload = state == HTTPServer.discarding ? nil : Unmanaged<Upload>.fromOpaque(state).takeUnretainedValue()
                        return server.answer(conn, method: String(cString: method), path: String(cString: url), upload: upload)
                    }, me, UInt32(clamping: max(1, connectionLimit)), UInt32(clamping: max(1, idleTimeoutSeconds)), 16 * 1024,
                    pem?.cert, pem?.key,
                    { cls, conn, conCls, _ in
                        // The request is over (answered or not): the next one's deadline starts.
                        if let cls, let conn, let id = mw_mhd_socket_context(conn) {
                            Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().connectionGuard.responseDone(Int(bitPattern: id))
                        }
                        guard let conCls, let state = conCls.pointee else { return }
                        if state != HTTPServer.discarding { Unmanaged<Upload>.fromOpaque(state).release() }
                        conCls.pointee = nil
                    },
                    { cls, conn, socketContext, event in
                        guard let cls, let conn, let socketContext else { return }
                        let guarded = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue().connectionGuard
                        if mw_mhd_connection_opened(event) != 0 {
                            var address: UInt32 = 0
                            _ = withUnsafeMutableBytes(of: &address) { mw_mhd_peer_ipv4(conn, $0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
                            socketContext.pointee = UnsafeMutableRawPointer(
                                bitPattern: guarded.opened(fd: mw_mhd_connection_fd(conn), address: address))
                        } else if let id = socketContext.pointee {
                            guarded.closed(Int(bitPattern: id))
                            socketContext.pointee = nil
                        }
                    })
            }
        }
        guard let d else {
            let e = errno
            connectionGuard.stop()
            wipePEM()
            if tls != nil, e != EADDRINUSE, e != EADDRNOTAVAIL, e != EACCES {
                throw HTTPServerError(.tls, "cannot start TLS on \(address): check that the certificate and the key are PEM and belong together")
            }
            throw HTTPServerError(.cannotListen, "cannot listen on \(address): \(String(cString: strerror(e)))")
        }
        daemon = d
        port = mw_mhd_port(d)
        boundAddress = HTTPServer.localAddress(fd: mw_mhd_listen_fd(d)) ?? "\(address[..<colon]):\(port)"
    }

    /// Builds the request, asks the responder, queues the response and logs the exchange.
    private func answer(_ conn: OpaquePointer, method: String, path: String, upload: Upload?) -> MHD_Result {
        var collector = QueryCollector()
        withUnsafeMutablePointer(to: &collector) { c in
            _ = mw_mhd_query_arguments(
                conn,
                { cls, _, key, value in
                    guard let cls, let key else { return .YES }
                    let c = cls.assumingMemoryBound(to: QueryCollector.self)
                    guard c.pointee.items.count < HTTPServer.maxQueryParameters else { c.pointee.overflow = true; return .NO }
                    c.pointee.items.append((String(cString: key), value.map { String(cString: $0) } ?? ""))
                    return .YES
                }, c)
        }
        var ip: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0)
        let peer: String? = withUnsafeMutableBytes(of: &ip) { b in
            mw_mhd_peer_ipv4(conn, b.baseAddress!.assumingMemoryBound(to: UInt8.self)) != 0 ? b.map(String.init).joined(separator: ".") : nil
        }
        var request = HTTPRequest(
            method: method, path: path, query: collector.items, queryOverflow: collector.overflow,
            authorization: mw_mhd_header(conn, "Authorization").map { String(cString: $0) }, peer: peer, isTLS: isTLS)
        request.cookie = mw_mhd_header(conn, "Cookie").map { String(cString: $0) }
        request.origin = mw_mhd_header(conn, "Origin").map { String(cString: $0) }
        request.host = mw_mhd_header(conn, "Host").map { String(cString: $0) }
        if let upload {
            request.body = upload.bytes
            request.bodyOverflow = upload.overflow
            request.contentType = mw_mhd_header(conn, "Content-Type").map { String(cString: $0) }
        }
        let (r, record) = responder(request)
        // libmicrohttpd copies the body (MUST_COPY): lent as it is, not copied into a mutable array first.
        let resp = r.bytes.withUnsafeBytes { mw_mhd_response_copy($0.count, $0.baseAddress) }
        guard let resp else { return .NO }
        _ = MHD_add_response_header(resp, "Content-Type", r.contentType)
        for (name, value) in r.headers { _ = MHD_add_response_header(resp, name, value) }
        let ok = MHD_queue_response(conn, r.status, resp)
        MHD_destroy_response(resp)
        if let record, let accessLog { accessLog(record) }
        return ok
    }

    private struct QueryCollector {
        var items: [(name: String, value: String)] = []
        var overflow = false
    }

    /// Open connections now.
    package var connections: Int { daemon.map { Int(mw_mhd_connections($0)) } ?? 0 }

    /// `HOST:PORT` of a bound IPv4 socket.
    static func localAddress(fd: Int32) -> String? {
        guard fd >= 0 else { return nil }
        var sin = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &sin) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) == 0 }
        }
        guard ok else { return nil }
        var buf = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        guard inet_ntop(AF_INET, &sin.sin_addr, &buf, socklen_t(buf.count)) != nil else { return nil }
        let address = String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return address + ":" + String(UInt16(bigEndian: sin.sin_port))
    }

    /// Overwrites and frees the PEM copies.
    private func wipePEM() {
        guard let (cert, key) = pem else { return }
        memset(key, 0, strlen(key))
        free(cert)
        free(key)
        pem = nil
    }

    /// Stops listening.
    package func stop() {
        if let d = daemon { MHD_stop_daemon(d); daemon = nil }
        connectionGuard.stop()
        wipePEM()
    }

    deinit { stop() }
}
