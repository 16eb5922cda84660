import MQTTTransport

import struct PostgresStore.PartitionSet

/// The partitions a run of the daemon holds leases on, with their fencing tokens.
public struct PartitionClaim: Sendable, Equatable {
    /// The owned partitions of all.
    public var partitions: PartitionSet
    /// The fencing token of each owned partition, in `partitions.owned` order.
    public var tokens: [Int64]

    /// The claim of these (partition, token) pairs among `count`.
    public init(count: Int, leases: [(partition: Int, token: Int64)]) {
        let sorted = leases.sorted { $0.partition < $1.partition }
        partitions = PartitionSet(count: count, owned: sorted.map(\.partition))
        tokens = sorted.map(\.token)
    }
}

extension Daemon {
    /// The owned partitions' sessions, with the subscriber's connection settings.
    func partitionSessions(_ claim: PartitionClaim, base: MQTTClientConfiguration, shards: [Shard]) -> PartitionInputService {
        let partitioning = config.partitioning ?? Partitioning(count: claim.partitions.count)
        return PartitionInputService(
            partitions: claim.partitions, partitioning: partitioning, base: base, layout: layout, shards: shards, log: log
        ) { [self] e, k in
            if case .subscribed = e { log.info("partition session subscribed", ["partition": String(k)]) }
            connectionEvent(e, role: "partition \(k)")
        }
    }
}
