import Foundation
import Glibc
import HTTPEndpoint
import TestSupport
import Testing

/// Slowloris, briefly: slow clients holding every connection the server allows, and a client
/// that sends its request at once is still answered, in well under the idle timeout.
@Suite struct SlowClientTests {
    /// A socket from `source` (a loopback address) connected to 127.0.0.1:`port`, or nil.
    static func connect(port: UInt16, from source: String) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var local = sockaddr_in(), remote = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_addr.s_addr = inet_addr("127.0.0.1")
        remote.sin_port = port.bigEndian
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok =
            withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } } == 0
            && withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, size) } } == 0
        if !ok { close(fd); return nil }
        return fd
    }

    /// `GET /healthz` from 127.0.0.1 with `seconds` to answer: the status, nil when none came.
    static func healthz(port: UInt16, within seconds: Int) -> Int? {
        guard let fd = LoopbackHTTP.connect(port: Int(port)) else { return nil }
        var tv = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        return LoopbackHTTP.exchange(fd: fd, path: "/healthz")?.status
    }

    @Test func aRequestSentAtOnceIsAnsweredWhileSlowClientsHoldEveryConnection() throws {
        let s = try HTTPServer(address: "127.0.0.1:0", connectionLimit: 64, idleTimeoutSeconds: 10) { _, path in
            HTTPResponse(body: path == "/healthz" ? "ok\n" : "?\n")
        }
        defer { s.stop() }
        // 80 slow clients from 8 addresses (10 each): each starts a request and never ends its headers.
        var slow: [Int32] = []
        defer { slow.forEach { close($0) } }
        let start = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Wait: ".utf8)
        for k in 0..<80 {
            guard let fd = Self.connect(port: s.port, from: "127.0.0.\(2 + k % 8)") else { continue }
            _ = start.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            slow.append(fd)
        }
        #expect(slow.count == 80)  // past the limit, the kernel's backlog holds them
        #expect(eventually(timeout: 5) { s.connections >= 56 }, "\(s.connections)")
        // Requests sent at once are answered, each within 3 s (the idle timeout is 10 s).
        let began = Date()
        let answers = (0..<5).map { _ in Self.healthz(port: s.port, within: 3) }
        #expect(answers == Array(repeating: 200, count: 5), "\(answers)")
        #expect(Date().timeIntervalSince(began) < 5)
        #expect(s.connections <= 64)
    }
}
