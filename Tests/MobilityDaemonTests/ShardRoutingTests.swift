import MobilityModel
import MobilityWire
import StateStore
import Testing

@testable import MobilityDaemon

/// Which shard holds a user: hashed over `--shards`, or by the user's partition in a partitioned run.
@Suite struct ShardRoutingTests {
    let users = (0..<2000).map { "user-\($0)" }

    @Test func aPartitionedRunKeepsEachPartitionsUsersInOneShard() {
        let partitions = PartitionSet(count: 16, owned: [13, 2, 7, 9, 4])
        // Dealt round two shards in partition order: 2, 7, 13 → 0; 4, 9 → 1.
        let routing = ShardRouting(partitions: partitions, shards: 2)
        #expect(routing.count == 2)
        #expect([2, 4, 7, 9, 13].map { routing.shard(ofPartition: $0) } == [0, 1, 0, 1, 0])
        #expect(routing.shard(ofPartition: 3) == nil && routing.shard(ofPartition: 16) == nil && routing.shard(ofPartition: -1) == nil)
        var shardsOfPartition: [Int: Set<Int>] = [:]
        for u in users where partitions.owned.contains(partitions.partition(of: u)) {
            shardsOfPartition[partitions.partition(of: u), default: []].insert(routing.shard(of: u))
        }
        #expect(shardsOfPartition == [2: [0], 4: [1], 7: [0], 9: [1], 13: [0]])
        // Never more shards than owned partitions.
        #expect(ShardRouting(partitions: partitions, shards: 8).count == 5)
        #expect(ShardRouting(partitions: PartitionSet(count: 16, owned: [5]), shards: 3).count == 1)
        // A parsed input goes where its user does; a user of a partition not owned, and anything
        // else, to the first.
        let layout = TopicLayout()
        for u in users.prefix(200) { #expect(routing.shard(of: layout.parse(layout.samples(u))) == routing.shard(of: u)) }
        let stranger = users.first { !partitions.owned.contains(partitions.partition(of: $0)) }!
        #expect(routing.shard(of: stranger) == 0)
        #expect(routing.shard(of: layout.parse("elsewhere/x")) == 0)
    }

    @Test func theSingleNodeDaemonSpreadsUsersByTheirIdsHash() {
        let routing = ShardRouting(shards: 3)
        #expect(routing.count == 3 && routing.shard(ofPartition: 0) == nil)
        var perShard = [0, 0, 0]
        for u in users {
            let s = routing.shard(of: u)
            #expect(s == Int(FNV1a64.hash(u) % 3))
            perShard[s] += 1
        }
        #expect(perShard.allSatisfy { $0 > 500 }, "\(perShard)")
    }
}
