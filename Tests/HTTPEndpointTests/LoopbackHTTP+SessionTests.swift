import HTTPEndpoint
import TestSupport
import Testing

/// `LoopbackHTTP.Session` against a real `HTTPServer`: requests share one connection, a body
/// longer than one read arrives whole, and a connection the server closed is replaced.
@Suite struct LoopbackHTTPSessionTests {
    static let big = String(repeating: "0123456789abcdef", count: 12_500)  // 200 KB: several reads

    static func server(idle: Int) throws -> HTTPServer {
        try HTTPServer(address: "127.0.0.1:0", connectionLimit: 8, idleTimeoutSeconds: idle) { _, path in
            HTTPResponse(status: path == "/missing" ? 404 : 200, body: path == "/big" ? big : "ok \(path)\n")
        }
    }

    @Test func requestsShareOneKeptAliveConnection() throws {
        let s = try Self.server(idle: 30)
        defer { s.stop() }
        let session = LoopbackHTTP.Session(port: Int(s.port))
        defer { session.close() }
        #expect(session.localPort == nil)
        #expect(session.get("/n")?.body == "ok /n\n")
        let first = try #require(session.localPort)
        for i in 0..<20 {
            let r = session.get("/n\(i)")
            #expect(r?.status == 200 && r?.body == "ok /n\(i)\n")
            #expect(session.localPort == first)
        }
        #expect(s.connections == 1)
        let big = session.get("/big")
        #expect(big?.body.count == Self.big.utf8.count && big?.body == Self.big)
        #expect(session.get("/missing")?.status == 404)
        #expect(session.get("/after")?.body == "ok /after\n")  // the stream stayed in step
        #expect(session.localPort == first)
    }

    @Test func aConnectionTheServerClosedIsReplaced() throws {
        let s = try Self.server(idle: 1)
        defer { s.stop() }
        let session = LoopbackHTTP.Session(port: Int(s.port))
        defer { session.close() }
        #expect(session.get("/first")?.body == "ok /first\n")
        let first = try #require(session.localPort)
        #expect(eventually(timeout: 5) { s.connections == 0 })  // the idle timeout closed it
        // The old connection answers nothing now: an answer came on a new one.
        #expect(session.get("/second")?.body == "ok /second\n")
        #expect(session.localPort != first)
    }

    @Test func nothingListeningIsNil() throws {
        let session = LoopbackHTTP.Session(port: try freePort())  // a port nothing in this process listens on
        #expect(session.get("/") == nil)
    }
}
