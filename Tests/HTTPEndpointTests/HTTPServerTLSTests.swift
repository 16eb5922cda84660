import Foundation
import Glibc
import HTTPEndpoint
import Synchronization
import TestSupport
import Testing

/// The router behind a real libmicrohttpd listener, over TLS with a throwaway CA, against a real
/// client (curl): the handshake, the token, the query and the access log as they cross the wire.
@Suite(.serialized) final class HTTPServerTLSTests {
    static let token = String(repeating: "9f", count: 32)
    let dir: String
    let records = Records()

    /// The access-log records the server handed over.
    final class Records: Sendable {
        private let m = Mutex<[HTTPAccessRecord]>([])
        func append(_ r: HTTPAccessRecord) { m.withLock { $0.append(r) } }
        func withLock<T>(_ f: ([HTTPAccessRecord]) -> T) -> T { m.withLock { f($0) } }
    }

    /// One throwaway CA for the suite (minting takes a second).
    static let minted: Result<String, any Error> = Result {
        let dir = TemporaryPath.make("mw-https")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try TestCertificates.mint(dir)
        return dir
    }

    init() throws { dir = try Self.minted.get() }

    func tls(key: String = "server.key") throws -> HTTPServer.TLS {
        HTTPServer.TLS(
            certificatePEM: try String(contentsOfFile: dir + "/server.crt", encoding: .utf8),
            keyPEM: try String(contentsOfFile: dir + "/" + key, encoding: .utf8))
    }

    func server(tls: HTTPServer.TLS?) throws -> HTTPServer {
        var router = HTTPRouter(tokens: try BearerTokens(parsing: "care-team:\(Self.token)\n"))
        router.get("/api/v1/users/{u}/reports", query: ["week"]) { req in
            .apiSuccess(data: "{\"week\":\"\(req.query("week") ?? "latest")\",\"user\":\"\(req.parameter("u")!)\"}")
        }
        return try HTTPServer(address: "127.0.0.1:0", tls: tls, router: router) { [records] r in records.append(r) }
    }

    @Test func libmicrohttpdHasTLS() { #expect(HTTPServer.supportsTLS) }

    @Test func aClientThatTrustsTheCAGetsTheReportWithTheToken() throws {
        let s = try server(tls: tls())
        defer { s.stop() }
        #expect(s.isTLS)
        let url = "https://127.0.0.1:\(s.port)/api/v1/users/jamie/reports?week=2026-W10"
        let r = try Curl.get(url, headers: ["Authorization: Bearer \(Self.token)"], caFile: dir + "/ca.crt")
        #expect(r.status == 200, "\(r.log)")
        #expect(r.body == #"{"status":"success","data":{"week":"2026-W10","user":"jamie"}}"#)
        #expect(r.headers["cache-control"] == "no-store")
        #expect(r.headers["strict-transport-security"] == "max-age=31536000")
        #expect(r.headers["content-security-policy"]?.hasPrefix("default-src 'none'") == true)
        // The access log: the token's name, the pattern, the parameter's name; nothing else.
        let logged = try #require(records.withLock { $0.last })
        #expect(
            logged
                == HTTPAccessRecord(
                    method: "GET", route: "/api/v1/users/{u}/reports", queryNames: ["week"], principal: "care-team",
                    status: 200, bytes: r.body.utf8.count, peer: "127.0.0.1", tls: true))
    }

    @Test func withoutOrWithAWrongTokenIs401() throws {
        let s = try server(tls: tls())
        defer { s.stop() }
        let url = "https://127.0.0.1:\(s.port)/api/v1/users/jamie/reports"
        let none = try Curl.get(url, caFile: dir + "/ca.crt")
        #expect(none.status == 401)
        #expect(none.headers["www-authenticate"] == "Bearer realm=\"mobilityd\"")
        #expect(none.body.contains("\"errorType\":\"unauthorized\""))
        let wrong = try Curl.get(url, headers: ["Authorization: Bearer " + String(repeating: "9e", count: 32)], caFile: dir + "/ca.crt")
        #expect(wrong.status == 401)
        #expect(wrong.headers["www-authenticate"]?.contains("invalid_token") == true)
        #expect(records.withLock { $0.map(\.principal) } == ["-", "-"])
    }

    @Test func aClientThatDoesNotTrustTheCAIsRefused() throws {
        let s = try server(tls: tls())
        defer { s.stop() }
        let r = try Curl.get("https://127.0.0.1:\(s.port)/api/v1/users/jamie/reports")
        #expect(r.status == 0)
        #expect(r.exitCode == 60, "\(r.log)")  // CURLE_PEER_FAILED_VERIFICATION
        #expect(records.withLock { $0.isEmpty })
    }

    @Test func plainHTTPToTheTLSListenerGetsNoAnswer() throws {
        let s = try server(tls: tls())
        defer { s.stop() }
        let r = try Curl.get("http://127.0.0.1:\(s.port)/api/v1/users/jamie/reports", headers: ["Authorization: Bearer \(Self.token)"])
        #expect(r.status != 200)
        #expect(!r.body.contains("jamie"))
        #expect(records.withLock { $0.isEmpty })
    }

    @Test func aKeyThatIsNotTheCertificatesIsATLSError() throws {
        let wrongKey = try tls(key: "ca.key")
        let garbage = HTTPServer.TLS(certificatePEM: "not a certificate", keyPEM: "not a key")
        for settings in [wrongKey, garbage] {
            let error = #expect(throws: HTTPServerError.self) { _ = try self.server(tls: settings) }
            #expect(error?.code == .tls, "\(String(describing: error))")
        }
    }

    /// A busy port is a listening failure (mobilityd: 75, restarted), not a TLS one (2).
    @Test func aBusyPortWithTLSIsCannotListen() throws {
        let s = try server(tls: tls())
        defer { s.stop() }
        let error = #expect(throws: HTTPServerError.self) {
            _ = try HTTPServer(address: "127.0.0.1:\(s.port)", tls: self.tls(), router: HTTPRouter(tokens: nil))
        }
        #expect(error?.code == .cannotListen, "\(String(describing: error))")
    }

    @Test func theQueryCrossesTheWireDecodedAndBounded() throws {
        let s = try server(tls: nil)
        defer { s.stop() }
        let base = "http://127.0.0.1:\(s.port)/api/v1/users/jamie/reports"
        let auth = ["Authorization: Bearer \(Self.token)"]
        #expect(try Curl.get(base + "?week=2026%2DW10", headers: auth).body.contains("\"week\":\"2026-W10\""))
        #expect(try Curl.get(base + "?week=1&week=2", headers: auth).status == 400)
        #expect(try Curl.get(base + "?" + (0..<70).map { "p\($0)=1" }.joined(separator: "&"), headers: auth).status == 400)
        // Past the connection's 16 KiB pool libmicrohttpd answers itself, and keeps serving.
        let huge = try Curl.get(base + "?week=" + String(repeating: "w", count: 20_000), headers: auth)
        #expect((400..<500).contains(huge.status), "\(huge.log)")
        #expect(try Curl.get(base, headers: auth).status == 200)
        // Percent-decoding cannot smuggle a separator into a parameter: the path has a segment more.
        #expect(try Curl.get("http://127.0.0.1:\(s.port)/api/v1/users/ja%2Fmie/reports", headers: auth).status == 404)
        #expect(try Curl.get("http://127.0.0.1:\(s.port)/api/v1/users/ja%20mie/reports", headers: auth).status == 400)
    }
}
