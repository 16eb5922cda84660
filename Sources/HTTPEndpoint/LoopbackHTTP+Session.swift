import Glibc

extension LoopbackHTTP {
    /// One kept-alive HTTP/1.1 connection to 127.0.0.1:port, for a poller that asks many times (a
    /// benchmark reading a counter every 10 ms): a new connection per request cost the measured
    /// daemon ~170 µs of CPU a request more on this VM. It reads responses that carry a
    /// `Content-Length`, as ``HTTPServer``'s always do. A kept connection the server has closed
    /// meanwhile (nothing at all came back) is replaced once; any other failure, a time-out
    /// included, is nil at once. It closes the connection when the server says `Connection: close`. Owns its socket (a
    /// class, closed on deinit); not for use from two threads at once.
    package final class Session {
        /// The port asked.
        package let port: Int
        /// How long a request may wait for its answer, in seconds.
        package let timeoutSeconds: Int
        private var fd: Int32 = -1

        /// A session to 127.0.0.1:port; it connects on the first request.
        package init(port: Int, timeoutSeconds: Int = 10) {
            self.port = port
            self.timeoutSeconds = timeoutSeconds
        }

        deinit { close() }

        /// `GET path`: the status and body, or nil when nothing answers (in time).
        package func get(_ path: String) -> (status: Int, body: String)? {
            for _ in 0..<2 {
                let reused = fd >= 0
                if !reused {
                    fd = LoopbackHTTP.connect(port: port) ?? -1
                    guard fd >= 0 else { return nil }
                    var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
                    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
                }
                switch exchange(path) {
                case .answered(let r, let keep):
                    if !keep { close() }
                    return r
                case .closedUnanswered where reused:
                    close()  // closed by the server while idle (timeout, restart): once more on a new connection
                default:
                    close()
                    return nil
                }
            }
            return nil
        }

        /// The local port of the open connection, or nil when none is open: one connection told
        /// from another.
        package var localPort: Int? {
            guard fd >= 0 else { return nil }
            var addr = sockaddr_in()
            var len = socklen_t(MemoryLayout<sockaddr_in>.size)
            let ok = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
            return ok == 0 ? Int(UInt16(bigEndian: addr.sin_port)) : nil
        }

        /// Closes the connection (the next request opens another).
        package func close() {
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
        }

        /// What one request came to.
        private enum Outcome {
            /// The response; `keep` is false when the server will close the connection.
            case answered((status: Int, body: String), keep: Bool)
            /// The connection was closed or reset before a byte of the response came back.
            case closedUnanswered
            /// A time-out, a response cut short, or one without a usable `Content-Length`.
            case failed
        }

        /// One request and its response.
        private func exchange(_ path: String) -> Outcome {
            let req = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
            guard req.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == req.count else {
                return errno == EPIPE || errno == ECONNRESET ? .closedUnanswered : .failed
            }
            var data: [UInt8] = []
            var buf = [UInt8](repeating: 0, count: 65536)
            var headerEnd: Int?
            var length = 0, keep = true
            while true {
                if let h = headerEnd, data.count >= h + 4 + length { break }
                let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return data.isEmpty && (n == 0 || errno == ECONNRESET) ? .closedUnanswered : .failed }
                data += buf[0..<n]
                if headerEnd == nil, let end = LoopbackHTTP.headerEnd(data) {
                    headerEnd = end
                    let lines = String(decoding: data[0..<end], as: UTF8.self).lowercased().split(separator: "\r\n")
                    func value(_ name: String) -> Substring? {
                        lines.first { $0.hasPrefix(name + ":") }.map { $0.dropFirst(name.count + 1).drop { $0 == " " || $0 == "\t" } }
                    }
                    guard let l = value("content-length").flatMap({ Int($0.filter { $0 != " " && $0 != "\t" }) }), l >= 0 else { return .failed }
                    length = l
                    keep = !(value("connection")?.hasPrefix("close") ?? false)
                }
            }
            guard let end = headerEnd, let status = LoopbackHTTP.status(data, headerEnd: end) else { return .failed }
            return .answered((status, String(decoding: data[(end + 4)..<(end + 4 + length)], as: UTF8.self)), keep: keep)
        }
    }
}
