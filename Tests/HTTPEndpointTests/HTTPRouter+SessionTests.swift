import HTTPEndpoint
import Synchronization
import Testing

/// The router's console routes without a socket: a session from its cookie, a form with the
/// session's CSRF token, and every refusal changing nothing (the handler never runs).
@Suite struct HTTPRouterSessionTests {
    final class Calls: Sendable {
        let list = Mutex<[String]>([])
        func add(_ s: String) { list.withLock { $0.append(s) } }
        var all: [String] { list.withLock { $0 } }
    }

    final class Clock: Sendable {
        let ms = Mutex<Int64>(1_000_000)
        func advance(minutes: Int64) { ms.withLock { $0 += minutes * 60_000 } }
    }

    struct Fixture {
        let clock = Clock()
        let sessions: ConsoleSessions
        var router: HTTPRouter
        let calls = Calls()

        init(consoleOrigins: [String] = ["http://127.0.0.1:9465"]) throws {
            let line = try StaffPasswordsTests.mosquittoLine("nurse.kim", "correct horse")
            let clock = clock
            sessions = ConsoleSessions(passwords: try StaffPasswords(parsing: line + " teams=ward-a\n")) { clock.ms.withLock { $0 } }
            router = HTTPRouter(tokens: nil, sessions: sessions, consoleOrigins: consoleOrigins)
            let calls = calls
            router.get("/console", access: .session) { r in
                calls.add("get \(r.principal ?? "")")
                return .html("<p>list</p>").adding("Content-Security-Policy", "default-src 'none'")
            }
            router.postForm("/console/act") { r in
                calls.add("post \(r.principal ?? "") \(r.form.value("note") ?? "")")
                return .text("done\n")
            }
        }

        func signedIn() throws -> (cookie: String, csrf: String) {
            guard case .signedIn(let id, let s) = sessions.signIn(login: "nurse.kim", password: Array("correct horse".utf8)) else {
                throw StaffPasswordsTests.Failure("sign-in refused")
            }
            return ("other=1; \(ConsoleSessions.cookieName)=\(id)", s.csrf)
        }

        func send(
            _ method: String, _ path: String, cookie: String?, body: String = "", type: String = "application/x-www-form-urlencoded"
        )
            -> HTTPResponse
        {
            var r = HTTPRequest(method: method, path: path, peer: "127.0.0.1")
            r.cookie = cookie
            if method == "POST" {
                r.body = Array(body.utf8)
                r.contentType = type
            }
            return router.respond(to: r).0
        }
    }

    @Test func withoutASessionAPageSendsToSignInAndAFormChangesNothing() throws {
        let f = try Fixture()
        let page = f.send("GET", "/console", cookie: nil)
        #expect(page.status == 303)
        #expect(page.header("Location") == "/console/sign-in")
        #expect(f.send("GET", "/console", cookie: "\(ConsoleSessions.cookieName)=\(String(repeating: "0", count: 64))").status == 303)
        #expect(f.send("POST", "/console/act", cookie: nil, body: "note=x").status == 401)
        #expect(f.calls.all.isEmpty)
    }

    @Test func aFormNeedsTheSessionsCSRFToken() throws {
        let f = try Fixture()
        let (cookie, csrf) = try f.signedIn()
        #expect(f.send("GET", "/console", cookie: cookie).status == 200)
        #expect(f.send("POST", "/console/act", cookie: cookie, body: "note=forged").status == 403)
        #expect(f.send("POST", "/console/act", cookie: cookie, body: "note=forged&csrf=\(String(repeating: "f", count: 64))").status == 403)
        #expect(f.send("POST", "/console/act", cookie: cookie, body: "{\"csrf\":\"\(csrf)\"}", type: "application/json").status == 415)
        #expect(f.send("POST", "/console/act", cookie: cookie, body: "note=%zz&csrf=\(csrf)").status == 400)
        var big = HTTPRequest(method: "POST", path: "/console/act", peer: "127.0.0.1")
        big.cookie = cookie
        big.contentType = "application/x-www-form-urlencoded"
        big.body = Array("csrf=\(csrf)&note=a".utf8)
        big.bodyOverflow = true
        #expect(f.router.respond(to: big).0.status == 413)
        #expect(f.calls.all == ["get nurse.kim"])
        let ok = f.send("POST", "/console/act", cookie: cookie, body: "note=seen+at+10%3A00&csrf=\(csrf)")
        #expect(ok.status == 200)
        #expect(f.calls.all == ["get nurse.kim", "post nurse.kim seen at 10:00"])
    }

    @Test func aFormFromAnotherOriginIsRefused() throws {
        let f = try Fixture()
        let (cookie, csrf) = try f.signedIn()
        func post(origin: String?, host: String = "127.0.0.1:9465") -> UInt32 {
            f.router.respond(to: Self.form(cookie: cookie, csrf: csrf, origin: origin, host: host)).0.status
        }
        #expect(post(origin: "https://evil.example") == 403)
        #expect(post(origin: "null") == 403)
        #expect(post(origin: "https://127.0.0.1:9465") == 403)  // not over TLS here
        // DNS rebinding: the page's Origin and the Host its browser sends agree, on another name.
        #expect(post(origin: "http://evil.example:9465", host: "evil.example:9465") == 403)
        #expect(f.calls.all.isEmpty)
        #expect(post(origin: "http://127.0.0.1:9465") == 200)
        #expect(post(origin: nil) == 200)
    }

    @Test func signingInAgainEndsTheBrowsersSession() throws {
        let f = try Fixture()
        let (old, _) = try f.signedIn()
        guard case .signedIn(let id, _) = f.sessions.signIn(login: "nurse.kim", password: Array("correct horse".utf8), replacing: old) else {
            Issue.record("the second sign-in was refused")
            return
        }
        #expect(f.sessions.session(cookieHeader: old) == nil)
        #expect(f.sessions.session(cookieHeader: "\(ConsoleSessions.cookieName)=\(id)")?.id == id)
        // A wrong password leaves the session as it was.
        _ = f.sessions.signIn(login: "nurse.kim", password: Array("wrong".utf8), replacing: "\(ConsoleSessions.cookieName)=\(id)")
        #expect(f.sessions.session(cookieHeader: "\(ConsoleSessions.cookieName)=\(id)") != nil)
    }

    @Test func aFormThroughATLSTerminatingProxyIsTaken() throws {
        let f = try Fixture(consoleOrigins: ["https://ward.example", "https://ward.example:8443"])
        let (cookie, csrf) = try f.signedIn()
        // The proxy speaks plain HTTP to the listener and passes the browser's Host and Origin on.
        for (origin, host) in [("https://ward.example", "ward.example"), ("https://ward.example:8443", "127.0.0.1:9465")] {
            let status = f.router.respond(to: Self.form(cookie: cookie, csrf: csrf, origin: origin, host: host)).0.status
            #expect(status == 200, "\(origin)")
        }
        #expect(f.router.respond(to: Self.form(cookie: cookie, csrf: csrf, origin: "http://127.0.0.1:9465", host: "127.0.0.1:9465")).0.status == 403)
        #expect(f.calls.all.count == 2)
    }

    /// A console form posted over plain HTTP with these `Origin` and `Host` headers.
    static func form(cookie: String, csrf: String, origin: String?, host: String) -> HTTPRequest {
        var r = HTTPRequest(method: "POST", path: "/console/act", peer: "127.0.0.1")
        r.cookie = cookie
        r.contentType = "application/x-www-form-urlencoded"
        r.body = Array("note=x&csrf=\(csrf)".utf8)
        r.origin = origin
        r.host = host
        return r
    }

    @Test func aPageKeepsItsOwnPolicy() throws {
        let f = try Fixture()
        let (cookie, _) = try f.signedIn()
        let r = f.send("GET", "/console", cookie: cookie)
        #expect(r.headers.filter { $0.name == "Content-Security-Policy" }.map(\.value) == ["default-src 'none'"])
        #expect(r.header("Cache-Control") == "no-store")
    }

    @Test func anIdleOrSignedOutSessionIsOver() throws {
        let f = try Fixture()
        let (cookie, csrf) = try f.signedIn()
        f.clock.advance(minutes: 31)
        #expect(f.send("GET", "/console", cookie: cookie).status == 303)
        #expect(f.send("POST", "/console/act", cookie: cookie, body: "note=late&csrf=\(csrf)").status == 401)
        let (cookie2, _) = try f.signedIn()
        f.sessions.signOut(id: String(cookie2.split(separator: "=").last!))
        #expect(f.send("GET", "/console", cookie: cookie2).status == 303)
        #expect(f.calls.all.isEmpty)
    }

    @Test func tenWrongPasswordsLockTheLoginEvenForTheRightOne() throws {
        let f = try Fixture()
        var outcomes: [ConsoleSessions.SignIn] = []
        for _ in 1...10 { outcomes.append(f.sessions.signIn(login: "nurse.kim", password: Array("wrong".utf8))) }
        let until = 1_000_000 + 15 * 60_000 as Int64
        #expect(outcomes[0..<4].allSatisfy { $0 == .refused(lockedUntil: nil) })
        #expect(outcomes[4] == .refused(lockedUntil: until))
        #expect(outcomes[5...].allSatisfy { $0 == .locked(until: until) })
        #expect(f.sessions.signIn(login: "nurse.kim", password: Array("correct horse".utf8)) == .locked(until: until))
        f.clock.advance(minutes: 15)
        guard case .signedIn(_, let s) = f.sessions.signIn(login: "nurse.kim", password: Array("correct horse".utf8)) else {
            Issue.record("not signed in after the lock")
            return
        }
        #expect(s.login == "nurse.kim" && s.teams == ["ward-a"] && s.csrf.count == 64)
    }

    @Test func theCookieIsSecureHttpOnlyStrict() throws {
        let f = try Fixture()
        let c = f.sessions.setCookie(id: "abc")
        #expect(c == "__Host-mw_console=abc; Secure; HttpOnly; SameSite=Strict; Path=/; Max-Age=43200")
        #expect(ConsoleSessions.cookie("__Host-mw_console", in: "a=1;__Host-mw_console=xyz; b=2") == "xyz")
        #expect(ConsoleSessions.cookie("__Host-mw_console", in: "__Host-mw_consolex=1") == nil)
    }

    @Test func aPageAskedForWithoutASessionIsCarriedToSignIn() throws {
        let f = try Fixture()
        #expect(f.send("GET", "/console", cookie: nil).header("Location") == "/console/sign-in")  // the list is where a sign-in leads anyway
        var r = HTTPRequest(method: "GET", path: "/console/patients/jamie", query: [("done", "ack")])
        #expect(HTTPRouter.signInLocation(returningTo: r) == "/console/sign-in?next=/console/patients/jamie%3Fdone%3Dack")
        r = HTTPRequest(method: "GET", path: "/console/patients/j amie&x", query: [("a b", "c&d=e")])
        #expect(HTTPRouter.signInLocation(returningTo: r) == "/console/sign-in?next=/console/patients/j%2520amie%2526x%3Fa%2520b%3Dc%2526d%253De")
        // A backslash in the (decoded) path travels encoded: a browser reads `%5C` as no separator.
        r = HTTPRequest(method: "GET", path: "/console/\\evil.example")
        #expect(HTTPRouter.signInLocation(returningTo: r) == "/console/sign-in?next=/console/%255Cevil.example")
        for path in ["/console//evil.example", "//evil.example", "/api/v1/users", "/console/sign-in", "/console/../x"] {
            #expect(HTTPRouter.signInLocation(returningTo: HTTPRequest(method: "GET", path: path)) == "/console/sign-in", "\(path)")
        }
    }

    static let returnPaths: [(String?, Bool)] = [
        ("/console", true), ("/console/", true), ("/console?sort=speed&show=firing", true), ("/console/patients/jamie", true),
        ("/console/patients/jamie/report?week=2026-W10", true), ("/console/patients/j%2F%2Fx", true), ("/console?next=//evil", false),
        (nil, false), ("", false), ("console", false), ("/", false), ("/consoleevil", false), ("/api/v1/users", false),
        ("//evil.example", false), ("//evil.example/console", false), ("///evil.example", false), ("https://evil.example/console", false),
        ("http:/console", false), ("javascript:alert(1)", false), ("/\\evil.example", false), ("\\\\evil.example", false),
        ("/console\\@evil.example", false), ("/console/\\evil", false), ("/console//evil.example", false), ("/console/../api/v1/users", false),
        ("/console/./x", false), ("/console/..", false), ("/console/sign-in", false), ("/console/sign-in?next=/console", false),
        ("/console\u{0}x", false), ("/console\r\nSet-Cookie: x=1", false), ("/console x", false), ("/console/p\u{E9}", false),
        ("/console/" + String(repeating: "a", count: 1024), false),
        // Browsers resolve `%2e` as `.` in dot segments.
        ("/console/%2e%2e/api/v1/status", false), ("/console/.%2e/x", false), ("/console/%2E/x", false), ("/console/%2e", false),
        ("/console/%zz", false), ("/console/patients/a%2ex", true)
    ]

    @Test(arguments: returnPaths) func aSignInReturnsOnlyToAConsolePage(_ path: String?, _ taken: Bool) {
        #expect((HTTPRouter.consoleReturnPath(path) != nil) == taken)
        if taken { #expect(HTTPRouter.consoleReturnPath(path) == path) }
    }
}
