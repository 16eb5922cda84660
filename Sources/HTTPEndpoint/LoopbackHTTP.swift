import Glibc

/// A minimal HTTP client for loopback: reads `/metrics` and `/healthz` of a local daemon
/// (benchmarks, test harnesses). Not a general HTTP client.
package enum LoopbackHTTP {
    /// A TCP socket connected to host:port (an IPv4 literal, 127.0.0.1 by default), or nil.
    package static func connect(host: String = "127.0.0.1", port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr(host)
        addr.sin_port = UInt16(port).bigEndian
        let ok = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if ok != 0 { close(fd); return nil }
        return fd
    }

    /// `GET path` on 127.0.0.1:port: the status and body, or nil when nothing answers.
    package static func get(port: Int, path: String) -> (status: Int, body: String)? {
        guard let fd = connect(port: port) else { return nil }
        return exchange(fd: fd, path: path)
    }

    /// `GET path` on a connected socket, which it closes: the status and body, or nil.
    package static func exchange(fd: Int32, path: String) -> (status: Int, body: String)? {
        defer { close(fd) }
        let req = Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        _ = req.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var data: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            data += buf[0..<n]
        }
        guard let end = headerEnd(data), let status = status(data, headerEnd: end) else { return nil }
        return (status, String(decoding: data[(end + 4)...], as: UTF8.self))
    }

    /// Where the headers end (the first CR LF CR LF), or nil before it arrived.
    static func headerEnd(_ data: [UInt8]) -> Int? {
        (0..<max(0, data.count - 3)).first { data[$0] == 13 && data[$0 + 1] == 10 && data[$0 + 2] == 13 && data[$0 + 3] == 10 }
    }

    /// The status code of a response's first line.
    static func status(_ data: [UInt8], headerEnd end: Int) -> Int? {
        let statusLine = String(decoding: data[0..<(data.firstIndex(of: 13) ?? end)], as: UTF8.self)
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2 else { return nil }
        return Int(parts[1])
    }
}
