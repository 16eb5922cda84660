import Foundation
import MobilityModel
import MobilityWire
import TestSupport
import Testing

@testable import MobilityDaemon

/// Alerts under the users' care teams, from a shard run in-process (``ShardHarness``): team
/// changes, the mapping file and bad team ids. (Through a real broker and daemon:
/// ``CareTeamsDaemonTests``.)
@Suite struct ShardCareTeamsTests {
    static let rule = "uncalibrated_6mwd"
    static func teamAlerts(_ team: String, _ user: String) -> String { "mobility/v1/teams/\(team)/users/\(user)/alerts/" }
    static func profile(_ user: String, _ teams: String) -> (topic: String, payload: String) {
        ("mobility/v1/users/\(user)/profile", "{\"timeZone\":\"Europe/Zurich\",\"careTeams\":\(teams)}")
    }
    /// A sample that fires the rule for `user`.
    static func fire(_ user: String, day: String = "2026-02-01") -> (topic: String, payload: String) {
        (samplesTopic(user), sampleJSON(id: "\(user)-\(day)", type: "sixMinuteWalkTestDistance", value: 500, unit: "m", end: "\(day)T08:00:00Z"))
    }

    /// A user moved from one team to another: the team left has nothing retained any more, the
    /// team joined has the firing alert (the same payload as the user topic's).
    @Test func teamChangeClearsTheOldTeamsRetainedAlert() throws {
        let h = try ShardHarness(dir: TemporaryPath.make("mw-teams"))
        defer { h.stop() }
        h.send([Self.profile("kim", "[\"ward-a\"]"), Self.fire("kim")])
        let firing = try #require(h.published.retained()[alertTopic("kim", Self.rule)])
        #expect(h.published.retained(prefix: Self.teamAlerts("ward-a", "kim")).values.map { $0 } == [firing])
        h.send([Self.profile("kim", "[\"ward-b\"]")])
        #expect(h.published.retained(prefix: Self.teamAlerts("ward-a", "kim")).isEmpty)
        #expect(h.published.retained(prefix: Self.teamAlerts("ward-b", "kim")) == [Self.teamAlerts("ward-b", "kim") + Self.rule: firing])
    }

    /// The teams survive a restart with the user's state: a profile that moves the user after the
    /// restart clears the old team's retained alert.
    @Test func aTeamChangeAfterARestartClearsTheOldTeam() throws {
        let dir = TemporaryPath.make("mw-teams")
        let before = try ShardHarness(dir: dir)
        before.send([Self.profile("kim", "[\"ward-a\"]"), Self.fire("kim")])
        before.stop()
        #expect(before.published.retained(prefix: Self.teamAlerts("ward-a", "kim")).count == 1)
        let after = try ShardHarness(dir: dir, published: before.published)
        defer { after.stop() }
        after.send([Self.profile("kim", "[\"ward-b\"]")])
        #expect(after.published.retained(prefix: Self.teamAlerts("ward-a", "kim")).isEmpty)
    }

    /// The operator's mapping wins over the team the gateway's profile claims.
    @Test func theMappingOverridesTheProfile() throws {
        let h = try ShardHarness(dir: TemporaryPath.make("mw-teams"), careTeams: CareTeams(assigned: ["ann": ["physio-south"]]))
        defer { h.stop() }
        h.send([Self.profile("ann", "[\"physio-north\"]"), Self.fire("ann")])
        #expect(h.published.messages(prefix: Self.teamAlerts("physio-south", "ann") + Self.rule).count == 1)
        #expect(h.published.messages(prefix: "mobility/v1/teams/physio-north/").isEmpty)
    }

    /// Bad team ids and too many teams: a reason on the user's rejected topic, counted, and the
    /// user's teams unchanged.
    @Test func badTeamIdsAreRejectedWithAReasonAndCounted() throws {
        let h = try ShardHarness(dir: TemporaryPath.make("mw-teams"))
        defer { h.stop() }
        h.send([Self.profile("bob", "[\"ward-a\"]")])
        let many = "[" + (1...9).map { "\"t\($0)\"" }.joined(separator: ",") + "]"
        h.send(["[\"Ward A\"]", "[\"ward/b\"]", "[\"\"]", "\"ward-b\"", "[1]", many].map { Self.profile("bob", $0) })
        let rejected = h.published.messages(prefix: "mobility/v1/users/bob/rejected")
        #expect(rejected.count == 6)
        for m in rejected {
            let j = try JSONValue.parse(m.payload).get()
            #expect(j["reason"] == .string("invalid_team"), "\(String(decoding: m.payload, as: UTF8.self))")
        }
        #expect(rejected.contains { String(decoding: $0.payload, as: UTF8.self).contains("at most 8") })
        #expect(h.stats.ingest.rejected[.invalidTeam] == 6)
        h.send([Self.fire("bob")])  // still ward-a's only
        #expect(h.published.messages(prefix: "mobility/v1/teams/").map(\.topic) == [Self.teamAlerts("ward-a", "bob") + Self.rule])
    }
}
