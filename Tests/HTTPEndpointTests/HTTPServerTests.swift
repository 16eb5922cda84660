import Foundation
import Glibc
import HTTPEndpoint
import MobilityModel
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

    @Test func nearTheLimitANewConnectionClosesTheLongestWaiting() throws {
        let s = try Self.server(limit: 4, idle: 10)
        defer { s.stop() }
        var fds: [Int32] = []
        defer { fds.forEach { close($0) } }
        for _ in 0..<8 { if let fd = LoopbackHTTP.connect(port: Int(s.port)) { fds.append(fd) } }
        #expect(fds.count == 8)
        // Each newcomer past 3 closes the one that has waited longest for a request: the first
        // ones go, long before their idle timeout, and the server never holds more than 4.
        #expect(Self.closedByPeer(fds[0], timeout: 3) && Self.closedByPeer(fds[1], timeout: 3))
        #expect(s.connections <= 4)
        #expect(LoopbackHTTP.get(port: Int(s.port), path: "/healthz")?.body == "ok\n")
    }

    /// Over a socket: a POST's body reaches the handler whole (in the chunks libmicrohttpd reads
    /// it in), one over the bound is a 413, and the server keeps serving.
    @Test func aPostBodyReachesTheHandlerAndABodyOverTheBoundIsRefused() throws {
        let token = String(repeating: "c3", count: 20)
        var router = HTTPRouter(tokens: try BearerTokens(parsing: "nurse:\(token)\n"))
        router.post("/api/v1/echo") { req in
            var w = JSONWriter()
            w.beginObject()
            w.int("bytes", Int64(req.body.count))
            w.int("sum", Int64(req.body.reduce(0) { $0 + Int($1) }))
            w.endObject()
            return .apiSuccess(data: w.text)
        }
        let s = try HTTPServer(address: "127.0.0.1:0", router: router)
        defer { s.stop() }
        let url = "http://127.0.0.1:\(s.port)/api/v1/echo", auth = ["Authorization: Bearer \(token)"]
        let body = (0..<12_000).map { UInt8($0 % 251) }
        let r = try Curl.post(url, body: body, headers: auth)
        #expect(
            r.status == 200 && r.body == "{\"status\":\"success\",\"data\":{\"bytes\":12000,\"sum\":\(body.reduce(0) { $0 + Int($1) })}}", "\(r.body) \(r.log)")
        let big = try Curl.post(url, body: Array(repeating: 0x20, count: HTTPServer.maxBodyBytes + 1), headers: auth)
        #expect(big.status == 413, "\(big.body)")
        #expect(try Curl.post(url, body: Array("{}".utf8), contentType: "text/plain", headers: auth).status == 415)
        #expect(try Curl.post(url, json: "{}", headers: auth).body.contains("\"bytes\":2"))
        #expect(try Curl.get(url, headers: auth).status == 405)
    }

    @Test func reportsTheAddressItBound() throws {
        let s = try HTTPServer(address: "127.0.0.3:0") { _, _ in HTTPResponse(body: "") }
        defer { s.stop() }
        #expect(s.port > 0)
        #expect(s.boundAddress == "127.0.0.3:\(s.port)")
    }
}
