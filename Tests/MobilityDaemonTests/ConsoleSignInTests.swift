import Foundation
import Glibc
import TestSupport
import Testing

/// The console's sign-in as mobilityd serves it: a staff file others can read is refused before
/// anything starts, a person signs in with the password mosquitto_passwd hashed, gets a session
/// cookie that is Secure, HttpOnly and SameSite=Strict, and signs out; a wrong password is
/// logged with the login only.
@Suite(.serialized) struct ConsoleSignInTests {
    static let token = String(repeating: "c0ffee42", count: 8)

    /// A directory with a tokens file and a staff file (`staffMode`) of `nurse.kim` (ward-a) and `nurse.ray` (ward-b).
    static func scratch(staffMode: mode_t = 0o600) throws -> String {
        let dir = TemporaryPath.make("mw-console")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try "care-team:\(token)\n".write(toFile: dir + "/tokens", atomically: true, encoding: .utf8)
        chmod(dir + "/tokens", 0o600)
        let kim = try mosquittoPasswdLine("nurse.kim", "kim's password", dir: dir)
        let ray = try mosquittoPasswdLine("nurse.ray", "ray's password", dir: dir)
        try "\(kim) teams=ward-a\n\(ray) teams=ward-b\n".write(toFile: dir + "/staff", atomically: true, encoding: .utf8)
        chmod(dir + "/staff", staffMode)
        return dir
    }

    /// A line of the real `mosquitto_passwd`.
    static func mosquittoPasswdLine(_ login: String, _ password: String, dir: String) throws -> String {
        let p = try ChildProcess("/usr/bin/mosquitto_passwd", ["-b", "-c", dir + "/passwd-" + login, login, password])
        guard p.wait(timeout: 10) == 0 else { throw HarnessError("mosquitto_passwd failed: \(p.log)") }
        return try String(contentsOfFile: dir + "/passwd-" + login, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Signs in; the session cookie (`__Host-mw_console=…`) and the response.
    static func signIn(_ base: String, _ login: String, _ password: String) throws -> (String?, Curl.Result) {
        let body = "login=\(login)&password=" + (password.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        let r = try Curl.post(base + "/console/sign-in", body: Array(body.utf8), contentType: "application/x-www-form-urlencoded")
        let cookie = r.headers["set-cookie"].flatMap { $0.split(separator: ";").first.map(String.init) }
        return (cookie, r)
    }

    @Test(arguments: [0o644, 0o640] as [mode_t])
    func aStaffFileOthersCanReadIsRefused(mode: mode_t) throws {
        let dir = try Self.scratch(staffMode: mode)
        let d = try ChildProcess(
            ChildProcess.product("mobilityd"),
            [
                "--rules", RepoPaths.rules, "--state", TemporaryPath.make("mw-never"), "--http-address", "127.0.0.1:9465", "--http-tokens", dir + "/tokens",
                "--console-staff", dir + "/staff"
            ])
        #expect(d.wait(timeout: 15) == 2)
        #expect(
            d.log.contains("console staff file \(dir)/staff holds password hashes but is accessible to group or others (mode 0\(String(mode, radix: 8)))"),
            "\(d.log)")
    }

    @Test func aPersonSignsInAndOut() throws {
        let dir = try Self.scratch()
        let broker = try MosquittoBroker()
        let port = try freePort()
        let daemon = try DaemonUnderTest(
            broker: broker, extra: ["--http-address", "127.0.0.1:\(port)", "--http-tokens", dir + "/tokens", "--console-staff", dir + "/staff"])
        defer { daemon.process.stop() }
        let base = "http://127.0.0.1:\(port)"

        let first = try Curl.get(base + "/console")
        #expect(first.status == 303)
        #expect(first.headers["location"] == "/console/sign-in")
        let page = try Curl.get(base + "/console/sign-in")
        #expect(page.status == 200)
        #expect(page.body.contains("<form class=\"signin\" method=\"post\" action=\"/console/sign-in\">"), "\(page.body)")
        #expect(page.headers["content-security-policy"]?.hasPrefix("default-src 'none'; style-src 'self';") == true)

        let (none, wrong) = try Self.signIn(base, "nurse.kim", "not kim's password")
        #expect(none == nil)
        #expect(wrong.status == 401)
        #expect(wrong.body.contains("The login or the password is wrong."))

        let (cookie, ok) = try Self.signIn(base, "nurse.kim", "kim's password")
        #expect(ok.status == 303)
        #expect(ok.headers["set-cookie"]?.hasSuffix("; Secure; HttpOnly; SameSite=Strict; Path=/; Max-Age=43200") == true)
        let cookieHeader = "Cookie: " + (cookie ?? "")
        let list = try Curl.get(base + "/console", headers: [cookieHeader])
        #expect(list.status == 200)
        #expect(list.body.contains("Signed in as nurse.kim"), "\(list.body)")
        guard let csrf = list.body.firstMatch(of: /name="csrf" value="([0-9a-f]{64})"/)?.1 else {
            Issue.record("no CSRF field: \(list.body)")
            return
        }
        // A mistyped address and a form with another session's token: console pages with a way back, not bare text.
        let typo = try Curl.get(base + "/console/patient/someone", headers: [cookieHeader])
        #expect(typo.status == 404)
        #expect(typo.body.contains("The console has no such page."), "\(typo.body)")
        #expect(typo.body.contains("<a href=\"/console\">Back</a>"), "\(typo.body)")
        let forged = try Curl.post(
            base + "/console/sign-out", body: Array("csrf=\(String(repeating: "0", count: 64))".utf8), contentType: "application/x-www-form-urlencoded",
            headers: [cookieHeader])
        #expect(forged.status == 403)
        #expect(forged.body.contains("The form&#39;s CSRF token is missing or not this session&#39;s: reload the page"), "\(forged.body)")
        #expect(forged.headers["content-security-policy"]?.hasPrefix("default-src 'none'; style-src 'self';") == true)
        let out = try Curl.post(
            base + "/console/sign-out", body: Array("csrf=\(csrf)".utf8), contentType: "application/x-www-form-urlencoded", headers: [cookieHeader])
        #expect(out.status == 303)
        #expect(out.headers["set-cookie"]?.hasPrefix("__Host-mw_console=; ") == true)
        #expect(try Curl.get(base + "/console", headers: [cookieHeader]).status == 303)
        // A form left open after the session ended: nothing changes, and the browser shows the sign-in form with why.
        let stale = try Curl.post(
            base + "/console/patients/anyone/ack", body: Array("alert=a&note=seen&csrf=\(csrf)".utf8), contentType: "application/x-www-form-urlencoded",
            headers: [cookieHeader])
        #expect(stale.status == 401)
        #expect(stale.body.contains("<form class=\"signin\" method=\"post\" action=\"/console/sign-in\">"), "\(stale.body)")
        #expect(stale.body.contains("Your session has ended"), "\(stale.body)")
        #expect(stale.headers["content-security-policy"]?.hasPrefix("default-src 'none'; style-src 'self';") == true)

        // Ten wrong passwords: the fifth locks the login, the rest and then the right one are refused as locked.
        var statuses: [Int] = []
        for k in 1...10 { statuses.append(try Self.signIn(base, "nurse.ray", "guess \(k)").1.status) }
        #expect(statuses == Array(repeating: 401, count: 5) + Array(repeating: 429, count: 5))
        let (none2, locked) = try Self.signIn(base, "nurse.ray", "ray's password")
        #expect(none2 == nil)
        #expect(locked.status == 429)
        #expect(locked.body.contains("Too many failed sign-ins for this login: it is locked for 15 more minutes."), "\(locked.body)")
        #expect(locked.body.contains("A colleague can act for your patients meanwhile; only a restart of mobilityd unlocks it sooner."), "\(locked.body)")
        #expect(daemon.process.log.contains("console login locked after repeated failures"))
        #expect(!daemon.process.log.contains("guess"))

        #expect(daemon.process.log.contains("console sign-in refused: wrong login or password"))
        #expect(daemon.process.log.contains("login=nurse.kim"))
        #expect(!daemon.process.log.contains("password="))
        #expect(!daemon.process.log.contains("MHD_OPTION_EXTERNAL_LOGGER"), "libmicrohttpd's own complaint about its options")
        #expect(!daemon.process.log.contains("kim's password"))
    }

    /// Signs in with a `next` field; the response.
    static func signIn(_ base: String, next: String) throws -> Curl.Result {
        let body = "login=nurse.kim&password=kim%27s%20password&next=" + (next.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        return try Curl.post(base + "/console/sign-in", body: Array(body.utf8), contentType: "application/x-www-form-urlencoded")
    }

    /// A page asked for without a session is where signing in leads; a `next` that would leave the
    /// console (another site, a scheme, `//`, a backslash, a path outside `/console`) leads to the list.
    @Test func signingInReturnsToThePageAskedForAndNowhereElse() throws {
        let dir = try Self.scratch()
        let broker = try MosquittoBroker()
        let port = try freePort()
        let daemon = try DaemonUnderTest(
            broker: broker, extra: ["--http-address", "127.0.0.1:\(port)", "--http-tokens", dir + "/tokens", "--console-staff", dir + "/staff"])
        defer { daemon.process.stop() }
        let base = "http://127.0.0.1:\(port)"

        let asked = try Curl.get(base + "/console?sort=speed&show=firing")
        #expect(asked.status == 303)
        let location = try #require(asked.headers["location"])
        #expect(location == "/console/sign-in?next=/console%3Fsort%3Dspeed%26show%3Dfiring")
        let page = try Curl.get(base + location)
        #expect(page.status == 200)
        #expect(page.body.contains("<input type=\"hidden\" name=\"next\" value=\"/console?sort=speed&amp;show=firing\"/>"), "\(page.body)")
        let back = try Self.signIn(base, next: "/console?sort=speed&show=firing")
        #expect(back.status == 303 && back.headers["location"] == "/console?sort=speed&show=firing")
        #expect(try Self.signIn(base, next: "/console/patients/ward-x").headers["location"] == "/console/patients/ward-x")

        for bad in [
            "//evil.example/console", "https://evil.example/console", "http:/console", "/\\evil.example", "\\\\evil.example", "/console//evil.example",
            "/console/\\evil", "/consoleevil", "/console/../api/v1/users", "/console/./x", "/api/v1/users", "console", "javascript:alert(1)",
            "/console/sign-in", "/console\u{0}x", "/console\nLocation: //evil", "/console/p\u{E9}", ""
        ] {
            let r = try Self.signIn(base, next: bad)
            #expect(r.status == 303 && r.headers["location"] == "/console", "\(bad.debugDescription): \(r.headers)")
            let form = try Curl.get(base + "/console/sign-in?next=" + (bad.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""))
            // The sign-in page carries no such `next` (libmicrohttpd reads a query value only up to a NUL: `/console`).
            let carried = form.body.firstMatch(of: /name="next" value="([^"]*)"/).map { String($0.1) }
            #expect(form.status == 200 && (carried == nil || carried == "/console"), "\(bad.debugDescription): \(carried ?? "")")
        }

        // The metrics count the sign-ins and sessions, and name no one.
        _ = try Self.signIn(base, "nurse.ray", "not ray's password")
        let metrics = daemon.metrics()
        #expect(metrics["mobilityd_console_sign_ins_total{result=\"signed_in\"}"] == 20, "\(metrics.filter { $0.key.contains("console") })")
        #expect(metrics["mobilityd_console_sign_ins_total{result=\"refused\"}"] == 1)
        #expect(metrics["mobilityd_console_sign_ins_total{result=\"locked\"}"] == 0)
        #expect(metrics["mobilityd_console_lockouts_total"] == 0)
        #expect(metrics["mobilityd_console_sessions"] == 20)
        #expect(!metrics.keys.contains { $0.contains("nurse.") })
    }
}
