import Glibc

extension LoopbackHTTP {
    /// One kept-alive HTTP/1.1 connection to 127.0.0.1:port, for a poller that asks many times (a
    /// benchmark reading a counter every 10 ms): a new connection per request cost the measured
    /// daemon ~170 µs of CPU a request more on this VM. It reads responses that carry a
    /// `Content-Length`, as ``HTTPServer``'s always do; it reconnects once when the server closed
    /// the connection, and closes it when the server says `Connection: close`. Owns its socket (a
    /// class, closed on deinit); not for use from two threads at once.
    public final class Session {
        /// The port asked.
        public let port: Int
        /// How long a request may wait for its answer, in seconds.
        public let timeoutSeconds: Int
        private var fd: Int32 = -1

        /// A session to 127.0.0.1:port; it connects on the first request.
        public init(port: Int, timeoutSeconds: Int = 10) {
            self.port = port
            self.timeoutSeconds = timeoutSeconds
        }

        deinit { close() }

        /// `GET path`: the status and body, or nil when nothing answers (in time).
        public func get(_ path: String) -> (status: Int, body: String)? {
            for _ in 0..<2 {
                if fd < 0 {
                    fd = LoopbackHTTP.connect(port: port) ?? -1
                    guard fd >= 0 else { return nil }
                    var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
                    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
                }
                if let (r, keep) = exchange(path) {
                    if !keep { close() }
                    return r
                }
                close()  // closed by the server (idle timeout, restart): once more on a new connection
            }
            return nil
        }

        /// The local port of the open connection, or nil when none is open: one connection told
        /// from another.
        public var localPort: Int? {
            guard fd >= 0 else { return nil }
            var addr = sockaddr_in()
            var len = socklen_t(MemoryLayout<sockaddr_in>.size)
            let ok = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
            return ok == 0 ? Int(UInt16(bigEndian: addr.sin_port)) : nil
        }

        /// Closes the connection (the next request opens another).
        public func close() {
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
        }

        /// One request and its response; nil when the connection failed or the response had no
        /// usable `Content-Length`. `keep` is false when the server will close the connection.
        private func exchange(_ path: String) -> (response: (status: Int, body: String), keep: Bool)? {
            let req = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
            guard req.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == req.count else { return nil }
            var data: [UInt8] = []
            var buf = [UInt8](repeating: 0, count: 65536)
            var headerEnd: Int?
            var length = 0, keep = true
            while true {
                if let h = headerEnd, data.count >= h + 4 + length { break }
                let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return nil }
                data += buf[0..<n]
                if headerEnd == nil, let end = LoopbackHTTP.headerEnd(data) {
                    headerEnd = end
                    let lines = String(decoding: data[0..<end], as: UTF8.self).lowercased().split(separator: "\r\n")
                    func value(_ name: String) -> Substring? {
                        lines.first { $0.hasPrefix(name + ":") }.map { $0.dropFirst(name.count + 1).drop { $0 == " " || $0 == "\t" } }
                    }
                    guard let l = value("content-length").flatMap({ Int($0.filter { $0 != " " && $0 != "\t" }) }), l >= 0 else { return nil }
                    length = l
                    keep = !(value("connection")?.hasPrefix("close") ?? false)
                }
            }
            guard let end = headerEnd, let status = LoopbackHTTP.status(data, headerEnd: end) else { return nil }
            return ((status, String(decoding: data[(end + 4)..<(end + 4 + length)], as: UTF8.self)), keep)
        }
    }
}
