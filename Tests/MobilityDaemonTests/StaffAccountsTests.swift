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
    static func deployment(_ logins: [(String, [String])], followers: [(String, [String])] = []) throws -> ShippedDeployment {
        let blocks = try logins.map { try block($0.0, teams: $0.1) } + followers.map { try block($0.0, teams: $0.1, follower: true) }
        return try ShippedDeployment(
            editACL: [("user nurse.kim\n", blocks.joined() + "user nurse.kim-shipped-example\n")],
            gateways: (logins + followers).map(\.0))
    }
}

@Suite(.serialized) struct StaffAccountsTests {
    private let notAuthorized: Int32 = 135

    /// Gives jamie (ward-a) and alex (ward-b) a firing alert each; returns their alert ids, as
    /// `dashboard` (subscribed to every user's alerts) sees them.
    private func twoAlerts(_ d: ShippedDeployment, _ dashboard: MQTTRecorder) throws -> (jamie: String, alex: String) {
        for (user, team) in [("jamie", "ward-a"), ("alex", "ward-b")] {
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
        return (try id("jamie"), try id("alex"))
    }

    private func ctl(_ d: ShippedDeployment, _ creds: String, _ login: String, _ args: [String]) throws -> ChildProcess {
        try ChildProcess(
            ChildProcess.product("mobilityctl"), args + ["--broker", d.tlsURL, "--ca-file", d.ca, "--credentials", creds, "--account", login])
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
        // A nurse of ward-b cannot act on ward-a's patient: mobilityctl says the broker refused.
        let ray = try ctl(d, creds, "nurse.ray", ["ack", "--team", "ward-a", "--user", "jamie", "--alert", jamieAlert])
        #expect(ray.wait(timeout: 30) == 1, "\(ray.log)")
        // …and acknowledges ward-b's under their own login.
        let rayB = try ctl(d, creds, "nurse.ray", ["ack", "--team", "ward-b", "--user", "alex", "--alert", alexAlert])
        #expect(rayB.wait(timeout: 30) == 0, "\(rayB.log)\n\(d.daemon!.log)")
        #expect(eventually { audit.messages(prefix: "mobility/v1/audit").count == 2 })
        let actors = audit.messages(prefix: "mobility/v1/audit").compactMap { m -> String? in
            guard case .success(let v) = JSONValue.parse(m.payload), case .string(let by)? = v["by"] else { return nil }
            return by
        }
        #expect(actors == ["nurse.kim", "nurse.ray"])
        #expect(d.metrics()["mobilityd_acknowledgements_total{result=\"accepted\"}"] == 2)
    }
}
