import Foundation
import Glibc
import HTTPEndpoint
import TestSupport
import Testing

/// Slowloris, briefly: slow clients holding every connection the server allows, and a token
/// holder who sends a request at once is still answered, in well under the idle timeout.
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

    static let token = String(repeating: "e4", count: 20)

    /// `GET /api/v1/ping` with the bearer token from 127.0.0.1, `seconds` to answer: the response's
    /// first line, nil when none came.
    static func ping(port: UInt16, within seconds: Int) -> String? {
        guard let fd = LoopbackHTTP.connect(port: Int(port)) else { return nil }
        defer { close(fd) }
        var tv = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let request = Array("GET /api/v1/ping HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var data: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            data += buf[0..<n]
        }
        return data.firstIndex(of: 13).map { String(decoding: data[..<$0], as: UTF8.self) }
    }

    @Test func aTokenHoldersRequestIsAnsweredWhileSlowClientsHoldEveryConnection() throws {
        var router = HTTPRouter(tokens: try BearerTokens(parsing: "nurse:\(Self.token)\n"))
        router.get("/api/v1/ping") { _ in .apiSuccess(data: "\"pong\"") }
        let s = try HTTPServer(address: "127.0.0.1:0", connectionLimit: 64, idleTimeoutSeconds: 10, router: router)
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
        let answers = (0..<5).map { _ in Self.ping(port: s.port, within: 3) }
        #expect(answers == Array(repeating: "HTTP/1.1 200 OK", count: 5), "\(answers)")
        #expect(Date().timeIntervalSince(began) < 5)
        #expect(s.connections <= 64)
    }
}
