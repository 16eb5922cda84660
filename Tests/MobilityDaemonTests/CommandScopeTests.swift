import MobilityWire
import Testing

import struct StateStore.PartitionSet

@testable import MobilityDaemon

/// Which instance answers a care-staff command: exactly one of the instances that share the partitions.
@Suite struct CommandScopeTests {
    @Test func oneInstanceAnswersEverything() {
        #expect(CommandScope.everything.owns(user: "jamie") && CommandScope.everything.decides(team: "physio-north"))
        #expect(CommandScope.everything.decides(team: nil) && !CommandScope.everything.isPartitioned)
    }

    /// Three instances holding 8 partitions between them: each user's acknowledgements and each
    /// team's silences (and a bad team segment) are answered by exactly one, the holder of the
    /// partition the id falls in.
    @Test(arguments: [[[0, 3, 6], [1, 4, 7], [2, 5]], [[0, 1, 2, 3, 4, 5, 6, 7]], [[7], [0, 1, 2, 3, 4, 5, 6]]])
    func exactlyOneInstanceAnswersEachCommand(_ shares: [[Int]]) {
        let scopes = shares.map { CommandScope(partitions: PartitionSet(count: 8, owned: $0)) }
        let all = PartitionSet(count: 8, owned: [0])
        for id in (0..<200).map({ "id-\($0)" }) + ["jamie-plateau", "physio-north", "a"] {
            let owners = scopes.indices.filter { scopes[$0].owns(user: id) }
            let deciders = scopes.indices.filter { scopes[$0].decides(team: id) }
            #expect(owners.count == 1 && owners == deciders, "\(id): \(owners) \(deciders)")
            #expect(shares[owners[0]].contains(all.partition(of: id)))
        }
        #expect(scopes.indices.filter { scopes[$0].decides(team: nil) }.count == 1)
        #expect(scopes.allSatisfy { $0.isPartitioned })
    }

    /// The outputs left in the outbox at a run's start: one about a user (on the user's topics,
    /// a team's copies, its FHIR copy) is published by exactly one of the instances, the owner of
    /// the user's partition; a team's silences by its decider only; any other (the audit, a
    /// refusal, another root's) by each.
    @Test func outputsArePublishedByTheRunThatWouldMakeThem() {
        let shares = [[0, 3, 6], [1, 4, 7], [2, 5]]
        let scopes = shares.map { CommandScope(partitions: PartitionSet(count: 8, owned: $0)) }
        let layout = TopicLayout()
        let publishers = { (topic: String) in scopes.indices.filter { scopes[$0].publishes(output: topic, root: layout.root) } }
        for user in (0..<100).map({ "user-\($0)" }) {
            let about = [
                layout.alert(user, rule: "stalled_recovery"), layout.series(user), layout.rejected(user), layout.acks(user),
                layout.teamAlert("physio-north", user: user, rule: "stalled_recovery"), layout.teamWeeklyReport("physio-north", user: user),
                "mobility/v1/fhir/users/\(user)/Flag/f-1"
            ]
            for topic in about {
                let p = publishers(topic)
                #expect(p.count == 1 && scopes[p[0]].owns(user: user), "\(topic): \(p)")
            }
        }
        for team in (0..<50).map({ "team-\($0)" }) {
            for topic in ["mobility/v1/teams/\(team)/silences", "mobility/v1/teams/\(team)/silences/s-1"] {
                let p = publishers(topic)
                #expect(p.count == 1 && scopes[p[0]].decides(team: team), "\(topic): \(p)")
            }
            #expect(publishers(layout.teamAudit(team)).count == 3)
        }
        for topic in [layout.audit, layout.rejectedUnknown, "other/users/x/alerts/y", "mobility/v1/users"] {
            #expect(publishers(topic).count == 3, "\(topic)")
        }
        #expect(CommandScope.everything.publishes(output: layout.series("jamie"), root: layout.root))
    }
}
