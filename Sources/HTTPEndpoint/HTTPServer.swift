import CMicroHTTPD
import Glibc

/// A response from an ``HTTPServer`` handler.
public struct HTTPResponse: Sendable {
    public var status: UInt32
    public var contentType: String
    public var body: String

    /// Creates a response.
    public init(status: UInt32 = 200, contentType: String = "text/plain; charset=utf-8", body: String) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }
}

/// Why the HTTP server could not start.
public struct HTTPServerError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// A tiny GET-only HTTP server on libmicrohttpd's own thread (epoll), for `/metrics` and `/healthz`.
///
/// Bounded: at most `connectionLimit` connections at once (more wait in the listen backlog),
/// each closed after `idleTimeoutSeconds` without activity, with a small per-connection pool, so
/// idle or slow clients can neither exhaust the process's descriptors nor starve a health check.
///
/// Sendability: `daemon` is only passed to libmicrohttpd (stopped once, in `stop`); the handler is
/// `@Sendable` and called from libmicrohttpd's thread.
public final class HTTPServer: @unchecked Sendable {
    nonisolated(unsafe) private var daemon: OpaquePointer?
    private let handler: @Sendable (_ method: String, _ path: String) -> HTTPResponse
    /// The bound port (useful when asked for port 0).
    public private(set) var port: UInt16 = 0
    /// The bound address as `HOST:PORT`, read back from the listening socket.
    public private(set) var boundAddress = ""

    /// The default bound on simultaneous connections.
    public static let defaultConnectionLimit = 2048

    /// Starts listening on `host:port` (IPv4 literal; use 127.0.0.1 for loopback only).
    public init(address: String, connectionLimit: Int = HTTPServer.defaultConnectionLimit, idleTimeoutSeconds: Int = 10,
                handler: @escaping @Sendable (String, String) -> HTTPResponse) throws(HTTPServerError) {
        self.handler = handler
        guard let colon = address.lastIndex(of: ":"), let p = UInt16(address[address.index(after: colon)...]) else {
            throw HTTPServerError(message: "metrics address '\(address)' must be HOST:PORT")
        }
        var sin = sockaddr_in()
        sin.sin_family = sa_family_t(AF_INET)
        sin.sin_port = p.bigEndian
        guard inet_pton(AF_INET, String(address[..<colon]), &sin.sin_addr) == 1 else {
            throw HTTPServerError(message: "metrics address '\(address)' needs an IPv4 literal host such as 127.0.0.1")
        }
        let me = Unmanaged.passUnretained(self).toOpaque()
        let d = withUnsafePointer(to: &sin) { ptr in
            ptr.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                mw_mhd_start(sa, { cls, conn, url, method, _, _, uploadSize, conCls in
                    guard let cls, let conn, let url, let method else { return .NO }
                    // The first call per request only sets up state; answer on the second.
                    if conCls?.pointee == nil { conCls?.pointee = UnsafeMutableRawPointer(bitPattern: 1); return .YES }
                    if let uploadSize, uploadSize.pointee != 0 { uploadSize.pointee = 0; return .YES }
                    let server = Unmanaged<HTTPServer>.fromOpaque(cls).takeUnretainedValue()
                    let m = String(cString: method)
                    let r = m == "GET" || m == "HEAD" ? server.handler(m, String(cString: url))
                        : HTTPResponse(status: 405, body: "method not allowed\n")
                    var bytes = Array(r.body.utf8)
                    let resp = bytes.withUnsafeMutableBytes {
                        mw_mhd_response_copy($0.count, $0.baseAddress)
                    }
                    guard let resp else { return .NO }
                    _ = MHD_add_response_header(resp, "Content-Type", r.contentType)
                    let ok = MHD_queue_response(conn, r.status, resp)
                    MHD_destroy_response(resp)
                    return ok
                }, me, UInt32(clamping: max(1, connectionLimit)), UInt32(clamping: max(1, idleTimeoutSeconds)), 16 * 1024)
            }
        }
        guard let d else { throw HTTPServerError(message: "cannot listen on \(address): \(String(cString: strerror(errno)))") }
        daemon = d
        port = mw_mhd_port(d)
        boundAddress = HTTPServer.localAddress(fd: mw_mhd_listen_fd(d)) ?? "\(address[..<colon]):\(port)"
    }

    /// Open connections now.
    public var connections: Int { daemon.map { Int(mw_mhd_connections($0)) } ?? 0 }

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

    /// Stops listening.
    public func stop() {
        if let d = daemon { MHD_stop_daemon(d); daemon = nil }
    }

    deinit { stop() }
}
