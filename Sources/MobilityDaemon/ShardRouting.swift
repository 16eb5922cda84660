import MobilityModel
import MobilityWire
import StateStore

/// Which shard holds a user, and so applies their messages and staff commands. The single-node
/// daemon spreads users over `--shards` shards by a hash of their id. A partitioned run puts all
/// of a partition's users in one shard (partitions dealt round the shards, as many shards as
/// `--shards` or owned partitions, whichever is fewer): a partition's batch is then one shard's
/// commit, which records the partition's position in its input too — the state and the position
/// of the input it applied committed together — and a shard's commit takes the batches of the
/// several partitions it holds along at once.
struct ShardRouting: Sendable, Equatable {
    /// The number of shards.
    let count: Int
    /// Partitioned: each partition's shard (nil for a partition not owned).
    private let slots: [Int?]?
    private let partitions: PartitionSet?

    /// `shards` shards, users spread by a hash of their id.
    init(shards: Int) {
        precondition(shards >= 1, "no shards")
        (count, slots, partitions) = (shards, nil, nil)
    }

    /// The owned partitions dealt round at most `shards` shards, in `owned` order.
    init(partitions: PartitionSet, shards: Int) {
        precondition(shards >= 1, "no shards")
        let count = min(shards, partitions.owned.count)
        var slots = [Int?](repeating: nil, count: partitions.count)
        for (i, k) in partitions.owned.enumerated() { slots[k] = i % count }
        (self.count, self.slots, self.partitions) = (count, slots, partitions)
    }

    /// The shard of partition `k` (nil when it is not owned, or users are not routed by partition).
    func shard(ofPartition k: Int) -> Int? { slots.flatMap { $0.indices.contains(k) ? $0[k] : nil } }

    /// The shard of a user (a user of a partition not owned — a command the scope lets through
    /// on no owned partition — goes to the first).
    func shard(of user: String) -> Int {
        guard let partitions else { return Int(FNV1a64.hash(user) % UInt64(count)) }
        return shard(ofPartition: partitions.partition(of: user)) ?? 0
    }

    /// The shard of a parsed inbound topic (its user's; the first for anything else).
    func shard(of parsed: TopicLayout.Parsed) -> Int {
        if case .inbound(let user, _) = parsed { return shard(of: user) }
        return 0
    }
}
