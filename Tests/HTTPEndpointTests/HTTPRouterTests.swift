import HTTPEndpoint
import MobilityModel
import Testing

/// The router without a socket: matching, the error envelopes, authentication, the bounds and
/// the access-log record.
@Suite struct HTTPRouterTests {
    static let token = String(repeating: "a1", count: 20)
    static let otherToken = String(repeating: "b2", count: 20)

    static func router() throws -> HTTPRouter {
        var r = HTTPRouter(tokens: try BearerTokens(parsing: "care-team:\(token)\nprometheus:\(otherToken)\n"))
        r.get("/api/v1/users/{u}/reports", query: ["week"]) { req in
            .apiSuccess(data: "{\"user\":\"\(req.parameter("u")!)\",\"week\":\"\(req.query("week") ?? "latest")\",\"by\":\"\(req.principal ?? "")\"}")
        }
        r.get("/users/{u}/report", query: ["week"]) { req in .html("<p>\(req.parameter("u")!)</p>") }
        r.get("/open", access: .open) { _ in .text("hello\n") }
        r.add(method: "POST", "/api/v1/users/{u}/annotations") { _ in .apiSuccess(data: "{}") }
        return r
    }

    static func get(
        _ path: String, query: [(String, String)] = [], method: String = "GET", auth: String? = "Bearer \(token)", tls: Bool = false
    )
        throws -> (HTTPResponse, HTTPAccessRecord)
    {
        try router().respond(
            to: HTTPRequest(
                method: method, path: path, query: query.map { (name: $0.0, value: $0.1) },
                authorization: auth, peer: "127.0.0.1", isTLS: tls))
    }

    /// The body parsed as a JSON object (its members by key).
    static func json(_ r: HTTPResponse) throws -> [String: JSONValue] {
        guard case .object(let o) = try JSONValue.parse(r.body).get() else { throw Failure("not an object: \(r.body)") }
        return Dictionary(o, uniquingKeysWith: { a, _ in a })
    }

    struct Failure: Error { let m: String; init(_ m: String) { self.m = m } }

    @Test func aParameterSegmentIsPassedToTheHandler() throws {
        let (r, _) = try Self.get("/api/v1/users/jamie/reports", query: [("week", "2026-W10")])
        #expect(r.status == 200)
        #expect(r.contentType == "application/json; charset=utf-8")
        #expect(r.body == #"{"status":"success","data":{"user":"jamie","week":"2026-W10","by":"care-team"}}"#)
    }

    @Test(arguments: ["/api/v1/users/jamie", "/api/v1/users//reports", "/api/v1/users/jamie/reports/", "/api/v1/nothing", "/api", "/api/v1/users/a/b/reports"])
    func anUnknownAPIPathIsA404Envelope(path: String) throws {
        let (r, record) = try Self.get(path)
        #expect(r.status == 404)
        let o = try Self.json(r)
        #expect(o["status"] == .string("error"))
        #expect(o["errorType"] == .string("not_found"))
        #expect(o["error"] != nil)
        #expect(record.route == "-")
    }

    @Test func anUnknownPagePathIsPlainText() throws {
        let (r, _) = try Self.get("/users/jamie/nothing")
        #expect(r.status == 404)
        #expect(r.contentType.hasPrefix("text/plain"))
    }

    @Test func anotherMethodIsA405WithAllow() throws {
        let (r, record) = try Self.get("/api/v1/users/jamie/reports", method: "DELETE")
        #expect(r.status == 405)
        #expect(r.header("Allow") == "GET, HEAD")
        #expect(try Self.json(r)["errorType"] == .string("method_not_allowed"))
        #expect(record.route == "/api/v1/users/{u}/reports")
        let (post, _) = try Self.get("/api/v1/users/jamie/annotations", method: "GET")
        #expect(post.status == 405)
        #expect(post.header("Allow") == "POST")
    }

    /// A POST route takes a JSON body: the router answers a body over the bound (413) or one that
    /// is not declared JSON (415) itself; the handler sees the body and the token.
    @Test func aPostRouteTakesAJSONBodyWithinItsBound() throws {
        var r = HTTPRouter(tokens: try BearerTokens(parsing: "nurse.kim:\(Self.token)\n"))
        r.post("/api/v1/users/{u}/events") { req in .apiSuccess(data: "{\"by\":\"\(req.principal ?? "")\",\"bytes\":\(req.body.count)}") }
        func post(_ body: String, type: String? = "application/json; charset=utf-8", overflow: Bool = false) -> HTTPResponse {
            var req = HTTPRequest(method: "POST", path: "/api/v1/users/u/events", authorization: "Bearer \(Self.token)")
            req.body = Array(body.utf8)
            req.bodyOverflow = overflow
            req.contentType = type
            return r.respond(to: req).0
        }
        let ok = post("{\"a\":1}")
        #expect(ok.status == 200 && ok.body == #"{"status":"success","data":{"by":"nurse.kim","bytes":7}}"#, "\(ok.body)")
        #expect(post("{}", type: "Application/JSON").status == 200)
        let big = post("", overflow: true)
        #expect(try big.status == 413 && Self.json(big)["errorType"] == .string("payload_too_large"))
        for type in [nil, "text/plain", "application/x-www-form-urlencoded"] {
            let wrong = post("a=1", type: type)
            #expect(try wrong.status == 415 && Self.json(wrong)["errorType"] == .string("unsupported_media_type"), "\(type ?? "none")")
        }
        var unauthenticated = HTTPRequest(method: "POST", path: "/api/v1/users/u/events")
        unauthenticated.contentType = "application/json"
        #expect(r.respond(to: unauthenticated).0.status == 401)
        let refused = HTTPResponse.apiError(.conflict, "taken", reason: "entry_exists")
        #expect(refused.status == 409 && refused.body == #"{"status":"error","errorType":"conflict","error":"taken","reason":"entry_exists"}"#)
    }

    @Test func headIsAnsweredByTheGetRoute() throws {
        let (r, record) = try Self.get("/users/jamie/report", method: "HEAD")
        #expect(r.status == 200)
        #expect(r.contentType == "text/html; charset=utf-8")
        #expect(record.method == "HEAD")
    }

    @Test func withoutATokenIs401WithAChallenge() throws {
        let (r, record) = try Self.get("/api/v1/users/jamie/reports", auth: nil)
        #expect(r.status == 401)
        #expect(r.header("WWW-Authenticate") == "Bearer realm=\"mobilityd\"")
        #expect(try Self.json(r)["errorType"] == .string("unauthorized"))
        #expect(record.principal == "-")
    }

    @Test(arguments: [
        "Bearer " + String(repeating: "a1", count: 19), "Bearer " + HTTPRouterTests.token + "x", "Basic " + HTTPRouterTests.token,
        "Bearer", "Bearer  ", HTTPRouterTests.token, "Bearer " + String(HTTPRouterTests.token.dropLast()) + "2"
    ])
    func aWrongTokenIs401(auth: String) throws {
        let (r, record) = try Self.get("/users/jamie/report", auth: auth)
        #expect(r.status == 401)
        #expect(r.header("WWW-Authenticate")?.hasPrefix("Bearer realm=\"mobilityd\"") == true)
        #expect(r.contentType.hasPrefix("text/plain"))
        #expect(!r.body.contains("jamie"))
        #expect(record.principal == "-")
    }

    @Test func eachTokenIsKnownByItsName() throws {
        let (r, record) = try Self.get("/api/v1/users/jamie/reports", auth: "bearer   \(Self.otherToken) ")
        #expect(r.status == 200)
        #expect(record.principal == "prometheus")
    }

    @Test func anOpenRouteNeedsNoToken() throws {
        #expect(try Self.get("/open", auth: nil).0.status == 200)
    }

    @Test func aRouterWithoutTokensRefusesTokenRoutes() throws {
        var r = HTTPRouter(tokens: nil)
        r.get("/api/v1/status") { _ in .apiSuccess(data: "{}") }
        #expect(r.respond(to: HTTPRequest(method: "GET", path: "/api/v1/status", authorization: "Bearer \(Self.token)")).0.status == 401)
    }

    @Test(
        arguments: [
            ([("week", "1"), ("week", "2")], "more than once"),
            ([("user", "alex")], "unknown query parameter"),
            ([("week", String(repeating: "w", count: 257))], "longer than 256 bytes"),
            ((0..<9).map { _ in ("week", "x") }, "more than 8 query parameters")
        ] as [([(String, String)], String)])
    func aBadQueryIsA400Envelope(query: [(String, String)], message: String) throws {
        let (r, record) = try Self.get("/api/v1/users/jamie/reports", query: query)
        #expect(r.status == 400)
        let o = try Self.json(r)
        #expect(o["errorType"] == .string("bad_data"))
        guard case .string(let m) = o["error"] else { Issue.record("no message"); return }
        #expect(m.contains(message), "\(m)")
        #expect(!m.contains("alex"))  // an unknown parameter's name is not echoed
        #expect(record.queryNames.isEmpty)
    }

    @Test func theServersOwnQueryOverflowIsA400() throws {
        let r = try Self.router().respond(
            to: HTTPRequest(
                method: "GET", path: "/api/v1/users/jamie/reports", queryOverflow: true,
                authorization: "Bearer \(Self.token)"))
        #expect(r.0.status == 400)
    }

    @Test(arguments: ["ja mie", "jämie", "a%2Fb", String(repeating: "u", count: 129), "j<script>"])
    func aBadParameterIsA400(user: String) throws {
        let (r, _) = try Self.get("/api/v1/users/\(user)/reports")
        #expect(r.status == 400)
        #expect(try Self.json(r)["errorType"] == .string("bad_data"))
        #expect(!r.body.contains(user))
    }

    @Test func anOverlongPathIsA414() throws {
        let (r, _) = try Self.get("/api/" + String(repeating: "x", count: 1100))
        #expect(r.status == 414)
        #expect(try Self.json(r)["errorType"] == .string("too_long"))
    }

    @Test(arguments: ["/api/v1/users/jamie/reports", "/users/jamie/report", "/nowhere", "/api/v1/users/x y/reports"])
    func everyResponseCarriesTheSecurityHeaders(path: String) throws {
        for auth in [nil, "Bearer \(Self.token)"] {
            let (r, _) = try Self.get(path, auth: auth)
            #expect(r.header("Cache-Control") == "no-store")
            #expect(r.header("X-Content-Type-Options") == "nosniff")
            #expect(r.header("Content-Security-Policy") == "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'")
            #expect(r.header("Referrer-Policy") == "no-referrer")
            #expect(r.header("Strict-Transport-Security") == nil)
        }
        #expect(try Self.get(path, tls: true).0.header("Strict-Transport-Security") == "max-age=31536000")
    }

    @Test func theAccessRecordHasThePatternTheTokensNameAndNoValues() throws {
        let (r, record) = try Self.get("/api/v1/users/jamie/reports", query: [("week", "2026-W10")])
        #expect(
            record
                == HTTPAccessRecord(
                    method: "GET", route: "/api/v1/users/{u}/reports", queryNames: ["week"], principal: "care-team",
                    status: 200, bytes: r.bytes.count, peer: "127.0.0.1", tls: false))
        let line = record.fields.map { "\($0.0)=\($0.1)" }.joined(separator: " ")
        #expect(!line.contains("jamie") && !line.contains("2026") && !line.contains(Self.token))
    }

    @Test func anUnusualMethodIsLoggedAsOther() throws {
        #expect(try Self.get("/open", method: "X-EVIL\nlevel=error").1.method == "OTHER")
    }
}
