import MQTTTransport
import MobilityWire
import Synchronization

import struct StateStore.PartitionSet

/// Partitioned input: one persistent MQTT session per owned partition (client id
/// `{sessionPrefix}{k}`, the same on every instance, clean session off), subscribed to partition
/// k's four input kinds under the broker's prefix (`part/k/mobility/v1/users/+/samples`, …).
/// Each message is handed to its user's shard with the prefix stripped and acknowledged to the
/// broker only once the shard committed it (``CommitWaiter``); there is no local journal, so a
/// lost machine loses nothing the broker was told: the session's next owner gets it again.
///
/// Stopping revokes the partitions first: a message still waiting for its commit is not
/// acknowledged (the connection is dropped under it), and none is taken after.
///
/// Sendability: `clients` is written only in `start`, before any client runs, and read in `stop`;
/// everything else is immutable or atomic.
final class PartitionInputService: Service, @unchecked Sendable {
    let name = "partition sessions"
    private var clients: [MQTTClient] = []
    private let revoked = Atomic<Bool>(false)
    private let configurations: [(Int, MQTTClientConfiguration)]
    private let partitions: PartitionSet
    private let partitioning: Partitioning
    private let layout: TopicLayout
    private let shards: [Shard]
    private let routing: ShardRouting
    private let log: Logger
    private let onEvent: @Sendable (MQTTConnectionEvent, Int) -> Void
    /// Messages of a user the broker put in another partition than ours: the mappings disagree.
    let mismatched = Atomic<Int>(0)

    /// - Parameter base: the connection settings (broker, credentials, TLS) of every session.
    init(
        partitions: PartitionSet, partitioning: Partitioning, base: MQTTClientConfiguration, layout: TopicLayout, shards: [Shard], routing: ShardRouting,
        log: Logger,
        onEvent: @escaping @Sendable (MQTTConnectionEvent, Int) -> Void
    ) {
        self.partitions = partitions
        self.partitioning = partitioning
        self.layout = layout
        self.shards = shards
        self.routing = routing
        self.log = log
        self.onEvent = onEvent
        configurations = partitions.owned.map { k in
            var c = base
            c.clientID = partitioning.sessionPrefix + String(k)
            c.cleanSession = false
            c.subscriptions = partitioning.subscriptions(of: k, root: layout.root)
            return (k, c)
        }
    }

    func start() throws {
        for (k, c) in configurations {
            let prefix = partitioning.prefix(of: k)
            let client = try MQTTClient(
                c, onMessage: { [self] client, topic, payload in take(topic, payload, partition: k, prefix: prefix, client: client) },
                onEvent: { [onEvent] _, e in onEvent(e, k) },
                onOversized: { [self] client, topic, size in
                    guard let inner = strip(topic, prefix) else { return }
                    let parsed = layout.parse(inner)
                    wait(for: shard(k), .oversized(topic: inner, parsed: parsed, size: size), client: client)
                },
                onRetained: { [self] client, topic, size in
                    // As the subscriber: only a profile may be retained (the broker delivers a
                    // retained message again on every reconnect and takeover); an empty one clears it.
                    guard let inner = strip(topic, prefix) else { return false }
                    let parsed = layout.parse(inner)
                    guard case .inbound(_, let kind) = parsed, kind != .profile else { return false }
                    if size > 0 { wait(for: shard(k), .retained(topic: inner, parsed: parsed), client: client) }
                    return true
                })
            clients.append(client)
        }
        do { for c in clients { try c.start() } } catch {
            log.error("cannot start a partition session", ["error": "\(error)"])
            throw error
        }
    }

    func stop() {
        revoked.store(true, ordering: .sequentiallyConsistent)
        for c in clients { c.stop() }
    }

    private func strip(_ topic: String, _ prefix: String) -> String? {
        guard topic.hasPrefix(prefix) else { return nil }
        return String(topic.dropFirst(prefix.utf8.count))
    }

    /// The shard of partition `k`'s messages (its users' shard).
    private func shard(_ k: Int) -> Shard { shards[routing.shard(ofPartition: k) ?? 0] }

    /// One message of partition `k`: to its user's shard, acknowledged once committed.
    private func take(_ topic: String, _ payload: [UInt8], partition k: Int, prefix: String, client: MQTTClient) {
        guard let inner = strip(topic, prefix) else { return }
        let parsed = layout.parse(inner)
        if case .inbound(let user, _) = parsed, partitions.partition(of: user) != k {
            // Our commit would file the user under another partition, one another instance may own.
            if mismatched.add(1, ordering: .relaxed).oldValue == 0 {
                log.error(
                    "the broker's partition of a user differs from ours; dropping its messages (check the mapping: partition(P,1) with P = --partitions)",
                    ["partition": String(k), "ours": String(partitions.partition(of: user))])
            }
            return
        }
        wait(for: shard(k), .message(seq: 0, topic: inner, parsed: parsed, payload: payload), client: client)
    }

    private func wait(for shard: Shard, _ item: ShardItem, client: MQTTClient) {
        if revoked.load(ordering: .relaxed) {
            client.abortConnection()
            return
        }
        let w = CommitWaiter()
        guard shard.queue.pushAll([item, .durable(w)]) else {
            client.abortConnection()
            return
        }
        if !w.wait(abandoned: { revoked.load(ordering: .relaxed) }) { client.abortConnection() }
    }
}
