import Foundation
import Glibc
import MobilityModel
import TestSupport
import Testing

/// Per-person staff logins on the shipped broker files: each login is a copy of the shipped
/// `nurse.kim` block of `deploy/mosquitto.acl` with the login and team replaced, as
/// docs/care-staff.md tells an operator to do.
enum StaffLogins {
    /// The shipped person block (`user nurse.kim` to the blank line), for `login` in `teams`;
    /// `follower`: the read-only copy for a login kept open by `mobilityctl alerts --follow`.
    static func block(_ login: String, teams: [String], follower: Bool = false) throws -> String {
        let acl = try String(contentsOfFile: RepoPaths.root + "/deploy/mosquitto.acl", encoding: .utf8)
        let start = try #require(acl.range(of: "user nurse.kim\n"))
        let lines = acl[start.lowerBound...].split(separator: "\n", omittingEmptySubsequences: false).prefix { !$0.isEmpty }
        let teamLines = lines.filter { $0.contains("/teams/ward-a/") }
        let loginLines = lines.filter { !$0.contains("/teams/ward-a/") && !$0.hasPrefix("user ") }
        var out = ["user \(login)"]
        for team in teams {
            for l in teamLines where !follower || l.hasPrefix("topic read ") {
                out.append(l.replacingOccurrences(of: "ward-a", with: team).replacingOccurrences(of: "nurse.kim", with: login))
            }
        }
        out += loginLines.map { $0.replacingOccurrences(of: "nurse.kim", with: login) }
        return out.joined(separator: "\n") + "\n\n"
    }

    /// A shipped deployment with these logins added (passwords in `passwords`).
    static func deployment(_ logins: [(String, [String])], followers: [(String, [String])] = [], gateways: [String] = []) throws -> ShippedDeployment {
        let blocks = try logins.map { try block($0.0, teams: $0.1) } + followers.map { try block($0.0, teams: $0.1, follower: true) }
        return try ShippedDeployment(
            editACL: [("user nurse.kim\n", blocks.joined() + "user nurse.kim-shipped-example\n")],
            gateways: (logins + followers).map(\.0) + gateways)
    }
}

@Suite(.serialized) struct StaffAccountsTests {
    private let notAuthorized: Int32 = 135

    /// Gives jamie (ward-a) and alex (ward-b) a firing alert each; returns their alert ids, as
    /// `dashboard` (subscribed to every user's alerts) sees them.
    private func twoAlerts(_ d: ShippedDeployment, _ dashboard: MQTTRecorder) throws -> (jamie: String, alex: String) {
        let ids = try alerts(d, dashboard, [("jamie", "ward-a"), ("alex", "ward-b")])
        return (ids[0], ids[1])
    }

    /// Gives each user (in its team) a firing alert; returns their alert ids.
    private func alerts(_ d: ShippedDeployment, _ dashboard: MQTTRecorder, _ users: [(String, String)]) throws -> [String] {
        for (user, team) in users {
            let gw = try d.client(user, filters: [])
            #expect(try gw.publishAwaitingAnswer("mobility/v1/users/\(user)/profile", "{\"timeZone\":\"UTC\",\"careTeams\":[\"\(team)\"]}", retain: true) == 0)
            let estimate = sampleJSON(id: "\(user)-6mwd", type: "sixMinuteWalkTestDistance", value: 500, unit: "m", end: isoNow())
            #expect(try gw.publishAwaitingAnswer(samplesTopic(user), estimate) == 0)
            gw.stop()
        }
        func id(_ user: String) throws -> String {
            let topic = alertTopic(user, "uncalibrated_6mwd")
            #expect(eventually { !dashboard.messages(prefix: topic).isEmpty }, "\(d.daemon!.log)")
            let first = try #require(dashboard.messages(prefix: topic).first)
            return try #require(AlertTransition.parse(first.payload)).id
        }
        return try users.map { try id($0.0) }
    }

    private func ctl(_ d: ShippedDeployment, _ creds: String, _ login: String, _ args: [String]) throws -> ChildProcess {
        try ChildProcess(
            ChildProcess.product("mobilityctl"), args + ["--broker", d.tlsURL, "--ca-file", d.ca, "--credentials", creds, "--account", login])
    }

    /// The console as shipped: the configuration's commented console and listener lines
    /// uncommented (paths and port substituted), a staff file of nurse.kim's line from the
    /// broker's password file with her team, the shipped broker. Gateway → daemon → nurse: she
    /// signs in over TLS with her broker password, acknowledges jamie's alert in a form, and the
    /// broker's audit and the retained alert name her login.
    @Test func aNurseActsInTheShippedConsoleUnderHerLogin() throws {
        let d = try StaffLogins.deployment([("nurse.kim", ["ward-a"])])
        let passwd = try String(contentsOfFile: d.dir + "/passwd", encoding: .utf8)
        let line = try #require(passwd.split(separator: "\n").first { $0.hasPrefix("nurse.kim:") })
        try "\(line) teams=ward-a\n".write(toFile: d.dir + "/console-staff", atomically: true, encoding: .utf8)
        try "care-team:\(UUID().uuidString)\(UUID().uuidString)\n".write(toFile: d.dir + "/http-tokens", atomically: true, encoding: .utf8)
        for f in ["console-staff", "http-tokens", "server.key"] { chmod(d.dir + "/" + f, 0o600) }
        let port = try freePort()
        try d.startDaemon(edit: [
            ("# http-address = 127.0.0.1:9465", "http-address = 127.0.0.1:\(port)"),
            ("# http-tokens = /run/credentials/mobilityd.service/http-tokens", "http-tokens = \(d.dir)/http-tokens"),
            ("# http-tls-cert = /etc/mobilitywatch/http.crt", "http-tls-cert = \(d.dir)/server.crt"),
            ("# http-tls-key = /run/credentials/mobilityd.service/http-key", "http-tls-key = \(d.dir)/server.key"),
            ("# console-staff = /run/credentials/mobilityd.service/console-staff", "console-staff = \(d.dir)/console-staff")
        ])
        let dashboard = try d.client("care-dashboard", filters: ["mobility/v1/audit", "mobility/v1/users/+/alerts/#"])
        let alert = try alerts(d, dashboard, [("jamie", "ward-a")])[0]

        let base = "https://127.0.0.1:\(port)"
        func form(_ path: String, _ fields: [(String, String)], _ headers: [String] = []) throws -> Curl.Result {
            let body = fields.map { $0.0 + "=" + ($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "") }.joined(separator: "&")
            return try Curl.post(base + path, body: Array(body.utf8), contentType: "application/x-www-form-urlencoded", headers: headers, caFile: d.ca)
        }
        let signIn = try form("/console/sign-in", [("login", "nurse.kim"), ("password", d.passwords["nurse.kim"]!)])
        let cookie = try #require(signIn.headers["set-cookie"]?.split(separator: ";").first.map { "Cookie: " + $0 }, "\(signIn.status) \(signIn.body)")
        let page = try Curl.get(base + "/console/patients/jamie", headers: [cookie], caFile: d.ca)
        #expect(page.status == 200, "\(page.body)")
        let csrf = try #require(ConsoleWard.csrf(page.body), "\(page.body)")
        let ack = try form("/console/patients/jamie/ack", [("alert", alert), ("note", "called"), ("csrf", csrf)], [cookie])
        #expect(ack.status == 303, "\(ack.body)")
        #expect(eventually { dashboard.messages(prefix: "mobility/v1/audit").contains { $0.text.contains("\"by\":\"nurse.kim\"") } }, "\(d.daemon!.log)")
        #expect(eventually { dashboard.messages(prefix: alertTopic("jamie", "uncalibrated_6mwd")).last?.text.contains("\"by\":\"nurse.kim\"") == true })
    }

    /// A command on a login's own topic is recorded under that login (the audit, the
    /// acknowledgement); a payload naming someone else is refused; no login can publish on another
    /// login's or another team's topic.
    @Test func theAuditNamesTheLoginNotAClaim() throws {
        let d = try StaffLogins.deployment([("nurse.kim", ["ward-a"]), ("nurse.ray", ["ward-b"])])
        try d.startDaemon()
        let audit = try d.client("care-dashboard", filters: ["mobility/v1/audit", "mobility/v1/teams/+/commands/rejected", "mobility/v1/users/+/alerts/#"])
        let (jamieAlert, alexAlert) = try twoAlerts(d, audit)
        let creds = try d.credentialsFile(["nurse.kim", "nurse.ray"])

        // Without --by, mobilityctl publishes on the login's own topic; the daemon records the login.
        let ack = try ctl(d, creds, "nurse.kim", ["ack", "--team", "ward-a", "--user", "jamie", "--alert", jamieAlert, "--note", "seen"])
        #expect(ack.wait(timeout: 30) == 0, "\(ack.log)\n\(d.daemon!.log)")
        #expect(ack.log.contains("acknowledged by nurse.kim"), "\(ack.log)")
        #expect(eventually { audit.messages(prefix: "mobility/v1/audit").contains { $0.text.contains("\"by\":\"nurse.kim\"") } })

        // So does a timeline entry: its history and audit name the login.
        let fall = try ctl(
            d, creds, "nurse.kim", ["event", "add", "--team", "ward-a", "--user", "jamie", "--kind", "fall", "--date", String(isoNow().prefix(10))])
        #expect(fall.wait(timeout: 30) == 0, "\(fall.log)\n\(d.daemon!.log)")
        #expect(fall.log.contains("by nurse.kim"), "\(fall.log)")

        // A payload claiming someone else on a login's topic is refused, with the reason.
        let kim = try d.client("nurse.kim", filters: [])
        let claim = "{\"alert\":\"\(jamieAlert)\",\"user\":\"jamie\",\"by\":\"dr.house\"}"
        #expect(try kim.publishAwaitingAnswer("mobility/v1/teams/ward-a/commands/ack/nurse.kim", claim) == 0)
        #expect(
            eventually {
                audit.messages(prefix: "mobility/v1/teams/ward-a/commands/rejected").contains {
                    $0.text.contains("invalid_field") && $0.text.contains("sent as nurse.kim")
                }
            })
        // The broker refuses another login's topic, another team's, and the team account's topic.
        for topic in [
            "mobility/v1/teams/ward-a/commands/ack/nurse.ray", "mobility/v1/teams/ward-b/commands/ack/nurse.kim",
            "mobility/v1/teams/ward-a/commands/ack", "mobility/v1/teams/ward-a/commands/silence/nurse.ray",
            "mobility/v1/teams/ward-a/commands/event/nurse.ray"
        ] {
            #expect(try kim.publishAwaitingAnswer(topic, claim) == notAuthorized, "\(topic)")
        }
        kim.stop()
        // No other account may write nurse.kim's topics: a patient's gateway (the ACL's `pattern`
        // lines apply to every account) or another nurse. (care-dashboard is the audit reader
        // here: a second connection of it would close the first, as its login is its client id.)
        for account in ["jamie", "alex", "nurse.ray"] {
            let other = try d.client(account, filters: [])
            for kind in ["ack", "silence", "event"] {
                let topic = "mobility/v1/teams/ward-a/commands/\(kind)/nurse.kim"
                #expect(try other.publishAwaitingAnswer(topic, claim) == notAuthorized, "\(account) → \(topic)")
            }
            other.stop()
        }
        // A nurse of ward-b cannot act on ward-a's patient: mobilityctl says the broker refused.
        let ray = try ctl(d, creds, "nurse.ray", ["ack", "--team", "ward-a", "--user", "jamie", "--alert", jamieAlert])
        #expect(ray.wait(timeout: 30) == 1, "\(ray.log)")
        // …and acknowledges ward-b's under their own login.
        let rayB = try ctl(d, creds, "nurse.ray", ["ack", "--team", "ward-b", "--user", "alex", "--alert", alexAlert])
        #expect(rayB.wait(timeout: 30) == 0, "\(rayB.log)\n\(d.daemon!.log)")
        #expect(eventually { audit.messages(prefix: "mobility/v1/audit").count == 3 })
        let actors = audit.messages(prefix: "mobility/v1/audit").compactMap { m -> String? in
            guard case .success(let v) = JSONValue.parse(m.payload), case .string(let by)? = v["by"] else { return nil }
            return by
        }
        #expect(actors == ["nurse.kim", "nurse.kim", "nurse.ray"])
        #expect(d.metrics()["mobilityd_acknowledgements_total{result=\"accepted\"}"] == 2)
    }

    /// Two nurses of ward-a, each following the team's alerts (`alerts --follow`, on a read-only
    /// follower login) while acknowledging and silencing at the same time, and a nurse of ward-b
    /// trying the same on ward-a's patients: nobody's connection is closed by anyone else's, ward-b
    /// changes nothing, and every audit row names the nurse who acted.
    @Test func twoNursesOfATeamWorkAtOnceWithoutKickingEachOther() throws {
        let d = try StaffLogins.deployment(
            [("nurse.kim", ["ward-a"]), ("nurse.lee", ["ward-a"]), ("nurse.ray", ["ward-b"])],
            followers: [("nurse.kim.follow", ["ward-a"]), ("nurse.lee.follow", ["ward-a"])], gateways: ["sam"])
        try d.startDaemon()
        let audit = try d.client("care-dashboard", filters: ["mobility/v1/audit", "mobility/v1/users/+/alerts/#", "mobility/v1/teams/+/silences"])
        let ids = try alerts(d, audit, [("jamie", "ward-a"), ("sam", "ward-a"), ("alex", "ward-b")])
        let creds = try d.credentialsFile(["nurse.kim", "nurse.lee", "nurse.ray", "nurse.kim.follow", "nurse.lee.follow"])
        // A follower of a team needs the team's retained index, which mobilityd publishes on its
        // next tick after the team's first patient: wait for it rather than race it.
        #expect(eventually(timeout: 15) { !audit.messages(prefix: "mobility/v1/teams/ward-a/silences").isEmpty })

        let followers = try ["nurse.kim.follow", "nurse.lee.follow"].map { try ctl(d, creds, $0, ["alerts", "--follow", "--team", "ward-a"]) }
        defer { for f in followers { _ = f.stop() } }
        for f in followers { #expect(eventually(timeout: 15) { f.log.contains(ids[0]) && f.log.contains(ids[1]) }, "\(f.log)") }

        // Both nurses act at once: each acknowledges one patient's alert, then silences the other's
        // (one command at a time per login: a login is its client id, so two connections of one
        // login at once would replace each other).
        let rounds = [
            [
                ["nurse.kim", "ack", "--team", "ward-a", "--user", "jamie", "--alert", ids[0], "--note", "called"],
                ["nurse.lee", "ack", "--team", "ward-a", "--user", "sam", "--alert", ids[1]]
            ],
            [
                ["nurse.kim", "silence", "add", "--team", "ward-a", "user=sam", "--duration", "2h", "--comment", "in theatre"],
                ["nurse.lee", "silence", "add", "--team", "ward-a", "user=jamie", "--duration", "1h", "--comment", "on leave"]
            ]
        ]
        for round in rounds {
            let running = try round.map { try ctl(d, creds, $0[0], Array($0.dropFirst())) }
            for a in running { #expect(a.wait(timeout: 30) == 0, "\(a.log)\n\(d.daemon!.log)") }
        }
        // ward-b's nurse cannot act on ward-a's patients: the broker refuses, mobilityctl exits 1.
        for args in [
            ["ack", "--team", "ward-a", "--user", "jamie", "--alert", ids[0]],
            ["silence", "add", "--team", "ward-a", "user=jamie", "--duration", "1h", "--comment", "x"],
            ["event", "add", "--team", "ward-a", "--user", "jamie", "--kind", "fall", "--date", String(isoNow().prefix(10))]
        ] {
            let p = try ctl(d, creds, "nurse.ray", args)
            #expect(p.wait(timeout: 30) == 1, "\(args): \(p.log)")
        }

        // Each follower printed both acknowledgements as they happened, and is still connected.
        for f in followers {
            #expect(eventually { f.log.contains("acknowledged") && f.log.contains("nurse.kim") && f.log.contains("nurse.lee") }, "\(f.log)")
            #expect(f.isRunning)
        }
        // No connection was closed for another with the same client id, and no follower reconnected.
        let log = d.broker.log
        #expect(!log.contains("already connected, closing old connection"), "\(log)")
        for login in ["nurse.kim.follow", "nurse.lee.follow"] {
            #expect(log.components(separatedBy: "as \(login) (").count - 1 == 1, "\(login) connected more than once:\n\(log)")
        }

        // The audit names each nurse: two acknowledgements and two silences, nothing of nurse.ray.
        #expect(eventually { audit.messages(prefix: "mobility/v1/audit").count == 4 })
        let rows = audit.messages(prefix: "mobility/v1/audit").compactMap { m -> String? in
            guard case .success(let v) = JSONValue.parse(m.payload), case .string(let by)? = v["by"], case .string(let action)? = v["action"],
                case .string(let user)? = v["user"]
            else { return nil }
            return "\(action) \(user) \(by)"
        }
        #expect(
            rows.sorted() == ["acknowledge jamie nurse.kim", "acknowledge sam nurse.lee", "silence sam nurse.kim", "silence jamie nurse.lee"].sorted(),
            "\(audit.messages(prefix: "mobility/v1/audit").map(\.text))")
        #expect(audit.messages(prefix: alertTopic("alex", "uncalibrated_6mwd")).allSatisfy { AlertTransition.parse($0.payload)?.acknowledged == nil })
    }
}
