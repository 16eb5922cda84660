import Foundation
import Glibc
import MobilityModel
import TestSupport
import Testing

/// `mobilityctl alerts --team` against mobilityd's team indexes: a team mobilityd knows shows its
/// table; a misspelt team, or one the shipped ACL does not let the account read, is an error.
@Suite(.serialized) struct AlertsTeamTests {
    @Test func aTeamMobilitydKnowsIsShownAndAMisspeltOneIsAnError() throws {
        let broker = try MosquittoBroker()
        let dir = TemporaryPath.make("mw-alerts-team")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/teams/+/silences"])
        let d = try Ctl.daemon(broker, dir: dir, careTeams: "jamie physio-north\nsam gait-lab\n")
        defer { d.stop() }
        let index = { (team: String) in rec.messages(prefix: "mobility/v1/teams/\(team)/silences").last?.text }
        #expect(eventually { index("physio-north") == "{\"team\":\"physio-north\",\"silences\":[]}" }, "\(rec.messages().map(\.text))")

        let known = try Ctl.run(["alerts", "--broker", broker.url, "--team", "physio-north"])
        #expect(known.status == 0, "\(known.stderr)")
        // An anonymous login (no ACL, a broker of tests) gets no hint about team accounts.
        let everyone = try Ctl.run(["alerts", "--broker", broker.url])
        #expect(everyone.status == 0 && everyone.stderr.isEmpty, "\(everyone.stderr)")
        #expect(known.stdout.hasPrefix("ID  "), "\(known.stdout)")
        let misspelt = try Ctl.run(["alerts", "--broker", broker.url, "--team", "physio-nort"])
        #expect(misspelt.status == 1 && misspelt.stdout.isEmpty, "\(misspelt.stdout)")
        #expect(misspelt.stderr.contains("no team 'physio-nort' to show"), "\(misspelt.stderr)")

        // The index lists the team's silences as they come and go.
        let add = try Ctl.run([
            "silence", "add", "--broker", broker.url, "--team", "physio-north", "user=jamie", "--duration", "1h", "--comment", "away", "--author",
            "nurse.kim"
        ])
        #expect(add.status == 0, "\(add.stderr)")
        let id = add.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(eventually { index("physio-north") == "{\"team\":\"physio-north\",\"silences\":[\"\(id)\"]}" }, "\(rec.messages().map(\.text))")
        #expect(index("gait-lab") == "{\"team\":\"gait-lab\",\"silences\":[]}")
    }

    /// The shipped ACL: a team account reads its own team only. mosquitto grants the subscription
    /// to another team's topics and delivers nothing; the command says so instead of "nothing firing".
    @Test func anotherTeamsTopicsAreAnErrorUnderTheShippedACL() throws {
        let dir = TemporaryPath.make("mw-alerts-acl")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for (k, (account, password)) in [("mobilityd-pub", "pub-secret"), ("staff-ward-a", "ward-a-secret"), ("care-dashboard", "dashboard-secret")]
            .enumerated()
        {
            let p = try ChildProcess("/usr/bin/mosquitto_passwd", (k == 0 ? ["-c"] : []) + ["-b", dir + "/passwd", account, password])
            try #require(p.wait() == 0, "\(p.log)")
        }
        let secret = dir + "/ward-a.password"
        try #require(FileManager.default.createFile(atPath: secret, contents: Data("ward-a-secret\n".utf8), attributes: [.posixPermissions: 0o600]))
        let port = try freePort()
        try """
        per_listener_settings false
        allow_anonymous false
        password_file \(dir)/passwd
        acl_file \(RepoPaths.root)/deploy/mosquitto.acl
        listener \(port) 127.0.0.1
        \(getuid() == 0 ? "user root" : "")

        """.write(toFile: dir + "/m.conf", atomically: true, encoding: .utf8)
        let mosquitto = try ChildProcess("/usr/sbin/mosquitto", ["-c", dir + "/m.conf"])
        defer { mosquitto.stop() }
        try #require(eventually { canConnect(port: port) })
        let url = "mqtt://127.0.0.1:\(port)"
        // What mobilityd's publisher would have retained: both teams' indexes, a firing alert in ward-b.
        let pub = try MQTTRecorder(url: url, filters: [], username: "mobilityd-pub", password: "pub-secret")
        for team in ["ward-a", "ward-b"] {
            #expect(try pub.publishAwaitingAnswer("mobility/v1/teams/\(team)/silences", "{\"team\":\"\(team)\",\"silences\":[]}", retain: true) == 0)
        }
        let since = Timestamp(seconds: 1_772_524_800)
        let alert = AlertTransition(
            id: AlertTransition.stableID(rule: "fall_risk", user: "sam", activeSince: since), rule: "fall_risk", user: "sam", severity: .critical,
            status: .firing, activeSince: since, firedAt: since, resolvedAt: nil, day: CivilDate(year: 2026, month: 3, day: 3),
            headline: "fall risk", labels: [], evidence: [], annotations: [])
        #expect(try pub.publishAwaitingAnswer("mobility/v1/teams/ward-b/users/sam/alerts/fall_risk", alert.json, retain: true) == 0)

        let login = ["--broker", url, "--username", "staff-ward-a", "--password-file", secret]
        let own = try Ctl.run(["alerts", "--team", "ward-a"] + login)
        #expect(own.status == 0 && own.stdout.hasPrefix("ID  "), "\(own.stderr)")
        // Without --team the account's subscription to every user is dropped by the ACL: a hint, not an error.
        let untagged = try Ctl.run(["alerts"] + login)
        #expect(untagged.status == 0 && untagged.stdout.hasPrefix("ID  "), "\(untagged.stderr)")
        #expect(untagged.stderr.contains("account staff-ward-a") && untagged.stderr.contains("give --team TEAM"), "\(untagged.stderr)")
        let other = try Ctl.run(["alerts", "--team", "ward-b"] + login)
        #expect(other.status == 1 && other.stdout.isEmpty, "\(other.stdout)")
        #expect(
            other.stderr.contains("no team 'ward-b' to show") && other.stderr.contains("or the account staff-ward-a may not read its topics"), "\(other.stderr)"
        )
        // The all-teams account reads every team's copies.
        let credentials = dir + "/credentials"
        try #require(
            FileManager.default.createFile(
                atPath: credentials, contents: Data("care-dashboard dashboard-secret\n".utf8), attributes: [.posixPermissions: 0o600]))
        let dashboard = try Ctl.run(["alerts", "--team", "ward-b", "--broker", url, "--credentials", credentials, "--account", "care-dashboard"])
        #expect(dashboard.status == 0 && dashboard.stdout.contains("fall_risk"), "\(dashboard.stdout) \(dashboard.stderr)")
    }
}
