import Foundation
import Glibc
import MobilityModel
import TestSupport
import Testing

/// Alerts under the users' care teams, with a real broker and daemon: the retained team topics a
/// subscriber finds, and a profile queued in the daemon's broker session while it is down. (Team
/// changes, the mapping and bad team ids in-process: ``ShardCareTeamsTests``.)
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
}
