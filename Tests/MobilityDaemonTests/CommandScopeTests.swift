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
}
