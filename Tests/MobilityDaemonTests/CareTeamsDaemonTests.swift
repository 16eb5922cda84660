import Foundation
import Glibc
import MobilityModel
import TestSupport
import Testing

/// Alerts under the users' care teams, with a real broker and daemon.
@Suite(.serialized) struct CareTeamsDaemonTests {
    static let rule = "uncalibrated_6mwd"
    func teamAlerts(_ team: String, _ user: String) -> String { "mobility/v1/teams/\(team)/users/\(user)/alerts/+" }
    func profile(_ user: String, _ teams: String) -> (String, String) {
        ("mobility/v1/users/\(user)/profile", "{\"timeZone\":\"Europe/Zurich\",\"careTeams\":\(teams)}")
    }
    func fire(_ rec: MQTTRecorder, _ user: String, day: String = "2026-02-01") throws {
        try rec.publish(samplesTopic(user), sampleJSON(id: "\(user)-\(day)", type: "sixMinuteWalkTestDistance", value: 500, unit: "m", end: "\(day)T08:00:00Z"))
    }

    /// Firing, resolution and clear arrive on the team topic exactly as on the user topic, and
    /// nothing stays retained under the team after the clear.
    @Test func teamTopicsMirrorTheUserTopics() throws {
        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker)
        let rec = try MQTTRecorder(url: broker.url, filters: [alertTopic("lee", "+"), teamAlerts("+", "lee")])
        let (pt, pp) = profile("lee", "[\"physio-north\",\"gait-lab\"]")
        try rec.publish(pt, pp, retain: true)
        try fire(rec, "lee")
        try rec.publish(
            samplesTopic("lee"),
            sampleJSON(
                id: "lee2", type: "sixMinuteWalkTestDistance", value: 420, unit: "m",
                end: "2026-02-08T08:00:00Z", metadata: "{\"HKMetadataKeyAppleDeviceCalibrated\":\"1\"}"))
        #expect(eventually { rec.messages(prefix: alertTopic("lee", Self.rule)).count == 3 })
        #expect(daemon.waitIdle())
        #expect(try rec.barrier())
        let user = rec.messages(prefix: alertTopic("lee", Self.rule)).map(\.payload)
        #expect(user.count == 3 && user[2].isEmpty)
        for team in ["physio-north", "gait-lab"] {
            #expect(rec.messages(prefix: "mobility/v1/teams/\(team)/users/lee/alerts/\(Self.rule)").map(\.payload) == user, "\(team)")
        }
        #expect(rec.messages(prefix: "mobility/v1/teams/").count == 6)
        let later = try MQTTRecorder(url: broker.url, filters: [teamAlerts("+", "lee")])
        #expect(try later.barrier())
        #expect(later.messages().isEmpty)
        #expect(daemon.process.stop() == 0)
    }

    /// A user moved from one team to another: the team left has nothing retained any more, the
    /// team joined has the firing alert (the same payload as the user topic's).
    @Test func teamChangeClearsTheOldTeamsRetainedAlert() throws {
        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker)
        let rec = try MQTTRecorder(url: broker.url, filters: [alertTopic("kim", "+"), teamAlerts("+", "kim")])
        let (pt, first) = profile("kim", "[\"ward-a\"]")
        try rec.publish(pt, first, retain: true)
        try fire(rec, "kim")
        #expect(eventually { rec.messages(prefix: "mobility/v1/teams/ward-a/").count == 1 })
        let firing = try #require(rec.messages(prefix: alertTopic("kim", Self.rule)).first).payload
        try rec.publish(pt, profile("kim", "[\"ward-b\"]").1, retain: true)
        #expect(eventually { rec.messages(prefix: "mobility/v1/teams/ward-b/").count == 1 })
        #expect(daemon.waitIdle())
        let later = try MQTTRecorder(url: broker.url, filters: [teamAlerts("ward-a", "kim"), teamAlerts("ward-b", "kim")])
        #expect(try later.barrier())
        #expect(later.messages(prefix: "mobility/v1/teams/ward-a/").isEmpty)
        #expect(later.messages(prefix: "mobility/v1/teams/ward-b/").map(\.payload) == [firing])
        #expect(daemon.process.stop() == 0)
    }

    /// The teams survive a restart with the user's state: a profile that moves the user while the
    /// daemon is down clears the old team's retained alert when the daemon is back.
    @Test func aTeamChangeWhileTheDaemonIsDownClearsTheOldTeam() throws {
        let broker = try MosquittoBroker()
        let state = TemporaryPath.make("mw-state")
        defer { try? FileManager.default.removeItem(atPath: state) }
        var daemon = try DaemonUnderTest(broker: broker, state: state)
        let rec = try MQTTRecorder(url: broker.url, filters: [teamAlerts("+", "kim")])
        let (pt, first) = profile("kim", "[\"ward-a\"]")
        try rec.publish(pt, first, retain: true)
        try fire(rec, "kim")
        #expect(eventually { rec.messages(prefix: "mobility/v1/teams/ward-a/").count == 1 })
        #expect(daemon.waitIdle())
        #expect(daemon.process.stop() == 0)
        try rec.publish(pt, profile("kim", "[\"ward-b\"]").1, retain: true)  // queued in the daemon's session
        daemon = try DaemonUnderTest(broker: broker, state: state)
        #expect(daemon.waitProcessed(2, timeout: 30))  // the queued profile, and the retained one again on subscribing
        #expect(daemon.waitIdle())
        let later = try MQTTRecorder(url: broker.url, filters: [teamAlerts("ward-a", "kim")])
        #expect(try later.barrier())
        #expect(later.messages(prefix: "mobility/v1/teams/ward-a/users/kim/alerts/").isEmpty, "\(later.messages().map(\.topic))")
        #expect(daemon.process.stop() == 0)
    }

    /// The operator's mapping file wins over the team the gateway's profile claims.
    @Test func theMappingFileOverridesTheProfile() throws {
        let file = TemporaryPath.make("mw-teams")
        defer { try? FileManager.default.removeItem(atPath: file) }
        #expect(
            FileManager.default.createFile(
                atPath: file, contents: Data("# operator's teams\nann physio-south\n".utf8),
                attributes: [.posixPermissions: 0o600]))
        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker, extra: ["--care-teams", file])
        let rec = try MQTTRecorder(url: broker.url, filters: [teamAlerts("+", "ann")])
        let (pt, pp) = profile("ann", "[\"physio-north\"]")
        try rec.publish(pt, pp, retain: true)
        try fire(rec, "ann")
        #expect(eventually { rec.messages(prefix: "mobility/v1/teams/physio-south/users/ann/alerts/\(Self.rule)").count == 1 })
        #expect(daemon.waitIdle())
        #expect(try rec.barrier())
        #expect(rec.messages(prefix: "mobility/v1/teams/physio-north/").isEmpty)
        #expect(daemon.process.stop() == 0)
    }

    /// Bad team ids and too many teams: a reason on the user's rejected topic, counted, and the
    /// user's teams unchanged.
    @Test func badTeamIdsAreRejectedWithAReasonAndCounted() throws {
        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker)
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/bob/rejected", teamAlerts("+", "bob")])
        let (pt, good) = profile("bob", "[\"ward-a\"]")
        try rec.publish(pt, good)
        let many = "[" + (1...9).map { "\"t\($0)\"" }.joined(separator: ",") + "]"
        for bad in ["[\"Ward A\"]", "[\"ward/b\"]", "[\"\"]", "\"ward-b\"", "[1]", many] { try rec.publish(pt, profile("bob", bad).1) }
        #expect(eventually { rec.messages(prefix: "mobility/v1/users/bob/rejected").count == 6 })
        for m in rec.messages(prefix: "mobility/v1/users/bob/rejected") {
            let j = try JSONValue.parse(m.payload).get()
            #expect(j["reason"] == .string("invalid_team"), "\(m.text)")
        }
        #expect(rec.messages(prefix: "mobility/v1/users/bob/rejected").contains { $0.text.contains("at most 8") })
        #expect(eventually { daemon.metric("mobilityd_rejected_total{reason=\"invalid_team\"}") == 6 })
        try fire(rec, "bob")  // still ward-a's only
        #expect(eventually { rec.messages(prefix: "mobility/v1/teams/ward-a/users/bob/").count == 1 })
        #expect(daemon.waitIdle())
        #expect(try rec.barrier())
        #expect(rec.messages(prefix: "mobility/v1/teams/").count == 1)
        #expect(daemon.process.stop() == 0)
    }
}
