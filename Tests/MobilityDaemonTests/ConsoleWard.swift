import Foundation
import Glibc
import MobilityModel
import Simulator
import TestSupport

/// A ward for the console's tests: mobilityd with the report listener, a staff file of
/// `nurse.kim` (ward-a) and `nurse.ray` (ward-b), and four patients whose 90 days end yesterday
/// (UTC): in ward-a a stalled recovery (`ward-stalled`), a normal one (`ward-normal`) and one
/// whose phone stopped sending 12 days ago (`ward-quiet`); in ward-b a normal one (`ward-b-normal`).
final class ConsoleWard: @unchecked Sendable {
    let dir: String
    let broker: MosquittoBroker
    let daemon: DaemonUnderTest
    let port: Int
    var base: String { "http://127.0.0.1:\(port)" }
    static let passwords = ["nurse.kim": "kim's password", "nurse.ray": "ray's password"]

    /// - Parameters:
    ///   - fhir: also publish FHIR resources (`--fhir on`).
    ///   - shared: `ward-stalled` is in ward-b as well as ward-a.
    init(fhir: Bool = false, shared: Bool = false) throws {
        dir = try ConsoleSignInTests.scratch()
        try "ward-stalled ward-a\(shared ? ",ward-b" : "")\nward-normal ward-a\nward-quiet ward-a\nward-b-normal ward-b\n".write(
            toFile: dir + "/teams", atomically: true, encoding: .utf8)
        chmod(dir + "/teams", 0o600)
        broker = try MosquittoBroker()
        port = try freePort()
        daemon = try DaemonUnderTest(
            broker: broker,
            extra: [
                "--http-address", "127.0.0.1:\(port)", "--http-tokens", dir + "/tokens", "--console-staff", dir + "/staff", "--care-teams",
                dir + "/teams"
            ] + (fhir ? ["--fhir", "on"] : []))
        let yesterday = LocalCalendar.utc.day(of: Timestamp(milliseconds: Int64(Date().timeIntervalSince1970 * 1000))) - 1
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        var count = 0
        for (story, user, days) in [
            (BuiltinScenario.jamiePlateau, "ward-stalled", 90), (.jamieNormal, "ward-normal", 90), (.jamieNormal, "ward-quiet", 78),
            (.jamieNormal, "ward-b-normal", 90)
        ] {
            var g = story.generator(user: user, seed: 6)
            g.timeline.start = CivilDate(dayNumber: yesterday - 89)
            g.timeline.days = days
            for r in g.generate().map(\.record) {
                try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self))
                count += 1
            }
        }
        guard daemon.waitProcessed(count, timeout: 120), daemon.waitIdle(timeout: 60) else {
            daemon.process.stop()
            throw HarnessError("the ward's traffic was not processed:\n\(daemon.process.log.suffix(3000))")
        }
    }

    deinit { daemon.process.stop() }

    /// Signs `login` in: the `Cookie:` header of its session.
    func signIn(_ login: String) throws -> String {
        let (cookie, r) = try ConsoleSignInTests.signIn(base, login, Self.passwords[login] ?? "")
        guard let cookie else { throw HarnessError("\(login) was not signed in: \(r.status) \(r.body)") }
        return "Cookie: " + cookie
    }

    /// A page of the console as `cookie`'s session sees it.
    func get(_ path: String, _ cookie: String) throws -> Curl.Result { try Curl.get(base + path, headers: [cookie]) }
}

extension ConsoleWard {
    /// The CSRF token of a console page.
    static func csrf(_ page: String) -> String? { page.firstMatch(of: /name="csrf" value="([0-9a-f]{64})"/).map { String($0.1) } }

    /// Posts a console form as `cookie`'s session (with `csrf` as its token, when given).
    func post(_ path: String, _ fields: [(String, String)], _ cookie: String, csrf: String?) throws -> Curl.Result {
        let all = fields + (csrf.map { [("csrf", $0)] } ?? [])
        let body = all.map { name, value in
            name + "=" + (value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        }.joined(separator: "&")
        return try Curl.post(base + path, body: Array(body.utf8), contentType: "application/x-www-form-urlencoded", headers: [cookie])
    }
}
