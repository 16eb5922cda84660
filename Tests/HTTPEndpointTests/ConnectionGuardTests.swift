import Foundation
import Glibc
import HTTPEndpoint
import TestSupport
import Testing

/// The request deadline and the per-address cap, against a real libmicrohttpd.
@Suite struct ConnectionGuardTests {
    static func server(perAddress: Int = 64, deadline: Double = 10) throws -> HTTPServer {
        try HTTPServer(
            address: "127.0.0.1:0", connectionsPerAddress: perAddress, idleTimeoutSeconds: 10, requestDeadlineSeconds: deadline,
            responder: { _ in (HTTPResponse(body: "ok\n"), nil) })
    }

    @Test func aRequestThatTricklesInIsClosedAtTheDeadline() throws {
        let s = try Self.server(deadline: 1)
        defer { s.stop() }
        let fd = try #require(LoopbackHTTP.connect(port: Int(s.port)))
        defer { close(fd) }
        let line = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8)
        _ = line.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        // One header byte every 0.2 s: never 10 s silent, so only the deadline can close it.
        var tv = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let began = Date()
        var closed = false
        var b: UInt8 = 0x58
        while !closed, Date().timeIntervalSince(began) < 6 {
            _ = send(fd, &b, 1, Int32(MSG_NOSIGNAL))
            closed = recv(fd, &b, 1, 0) == 0
            b = 0x58
        }
        #expect(closed, "still open after 6 s")
        #expect(Date().timeIntervalSince(began) >= 0.9)
        // A request that comes whole is answered, and the next one on the same connection too.
        let ok = try #require(LoopbackHTTP.connect(port: Int(s.port)))
        #expect(LoopbackHTTP.exchange(fd: ok, path: "/healthz")?.status == 200)
    }

    @Test func oneAddressHoldsAtMostItsShare() throws {
        let s = try Self.server(perAddress: 4)
        defer { s.stop() }
        var fds: [Int32] = []
        defer { fds.forEach { close($0) } }
        for _ in 0..<8 { if let fd = SlowClientTests.connect(port: s.port, from: "127.0.0.2") { fds.append(fd) } }
        #expect(fds.count == 8)
        // The four that waited longest are closed; the four newest stay.
        var tv = timeval(tv_sec: 0, tv_usec: 100_000)
        var closed: Set<Int32> = []
        #expect(
            eventually(timeout: 3) {
                for fd in fds where !closed.contains(fd) {
                    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
                    var b: UInt8 = 0
                    if recv(fd, &b, 1, Int32(MSG_DONTWAIT)) == 0 { closed.insert(fd) }
                }
                return closed.count == 4
            }, "\(closed.count) closed")
        #expect(closed == Set(fds.prefix(4)))
        // The server counts a connection gone when libmicrohttpd reports it closed, after the
        // client saw the end of its stream: wait for it.
        #expect(eventually(timeout: 3) { s.connections == 4 }, "\(s.connections) connections")
        // Another address is served, and so is a newcomer from the same one (on loopback every
        // local client shares the address: refusing newcomers would lock them all out).
        let other = try #require(SlowClientTests.connect(port: s.port, from: "127.0.0.3"))
        #expect(LoopbackHTTP.exchange(fd: other, path: "/healthz")?.status == 200)
        let same = try #require(SlowClientTests.connect(port: s.port, from: "127.0.0.2"))
        #expect(LoopbackHTTP.exchange(fd: same, path: "/healthz")?.status == 200)
    }
}
