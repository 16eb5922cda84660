import Foundation
import Glibc
import HTTPEndpoint
import TestSupport
import Testing

/// The server's bounds: a connection limit, an idle timeout, the address it reports.
@Suite struct HTTPServerTests {
    static func server(limit: Int = 64, idle: Int = 10) throws -> HTTPServer {
        try HTTPServer(address: "127.0.0.1:0", connectionLimit: limit, idleTimeoutSeconds: idle) { _, path in
            HTTPResponse(body: path == "/healthz" ? "ok\n" : "?\n")
        }
    }

    /// True once the peer has closed `fd` (a read returns 0 or fails), within `timeout`.
    static func closedByPeer(_ fd: Int32, timeout: TimeInterval) -> Bool {
        var tv = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var b: UInt8 = 0
        return eventually(timeout: timeout) { recv(fd, &b, 1, 0) == 0 }
    }

    @Test func idleConnectionsAreClosedAfterTheTimeout() throws {
        let s = try Self.server(idle: 1)
        defer { s.stop() }
        let fd = try #require(LoopbackHTTP.connect(port: Int(s.port)))
        defer { close(fd) }
        #expect(Self.closedByPeer(fd, timeout: 5))
        #expect(LoopbackHTTP.get(port: Int(s.port), path: "/healthz")?.body == "ok\n")
    }

    @Test func connectionsBeyondTheLimitWaitForAFreeSlot() throws {
        let s = try Self.server(limit: 4, idle: 1)
        defer { s.stop() }
        var fds: [Int32] = []
        defer { fds.forEach { close($0) } }
        for _ in 0..<8 { if let fd = LoopbackHTTP.connect(port: Int(s.port)) { fds.append(fd) } }
        #expect(fds.count == 8)  // the kernel's backlog holds the ones past the limit
        #expect(eventually(timeout: 2) { s.connections == 4 })
        #expect(s.connections <= 4)
        // As idle ones time out, waiting ones are accepted, and a request is answered.
        #expect(LoopbackHTTP.get(port: Int(s.port), path: "/healthz")?.body == "ok\n")
    }

    @Test func reportsTheAddressItBound() throws {
        let s = try HTTPServer(address: "127.0.0.3:0") { _, _ in HTTPResponse(body: "") }
        defer { s.stop() }
        #expect(s.port > 0)
        #expect(s.boundAddress == "127.0.0.3:\(s.port)")
    }
}
