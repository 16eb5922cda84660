import JetStreamAccess
import MQTTTransport
import PostgresStore
import StateStore

/// The partitions a run of the daemon holds leases on, with their fencing tokens.
package struct PartitionClaim: Sendable, Equatable {
    /// The owned partitions of all.
    package var partitions: PartitionSet
    /// The fencing token of each owned partition, in `partitions.owned` order.
    package var tokens: [Int64]

    /// The claim of these (partition, token) pairs among `count`.
    package init(count: Int, leases: [(partition: Int, token: Int64)]) {
        let sorted = leases.sorted { $0.partition < $1.partition }
        partitions = PartitionSet(count: count, owned: sorted.map(\.partition))
        tokens = sorted.map(\.token)
    }
}

extension Daemon {
    /// How the claimed partitions are consumed: the configuration's, or the defaults for the
    /// claim's partition count. The one place the run's intake is decided (its inputs, and what
    /// keeps a shard's messages until their commit).
    func partitioning(of claim: PartitionClaim) -> Partitioning { config.partitioning ?? Partitioning(count: claim.partitions.count) }

    /// The owned partitions' input, by `--intake`: their MQTT sessions (with the subscriber's
    /// connection settings) or their JetStream consumers (over `--nats`, committing their stream
    /// positions in the PostgreSQL store).
    func partitionInput(
        _ claim: PartitionClaim, base: MQTTClientConfiguration, shards: [Shard], routing: ShardRouting, store: any StateBackend
    ) throws(ComponentFailure)
        -> any Service & Sendable
    {
        let partitioning = partitioning(of: claim)
        guard partitioning.intake == .jetStream else { return partitionSessions(claim, base: base, shards: shards, routing: routing) }
        guard let postgres = store as? PostgresStore else {
            log.error("--intake jetstream needs the PostgreSQL store")
            throw ComponentFailure()
        }
        let config = config
        return PartitionStreamService(
            claim: claim, partitioning: partitioning, layout: layout, shards: shards, routing: routing, store: postgres, log: log, links: partitionLinks,
            maxPayloadBytes: config.maxPayloadBytes, commitIntervalMs: config.commitIntervalMs,
            clock: clock, leaseMs: partitioning.leaseMs,
            connect: { () throws(JetStreamFailure) -> NATSConnection in
                try NATSConnection(
                    urls: partitioning.natsURLs, username: config.username, password: config.password, caFile: config.caFile, certFile: config.certFile,
                    keyFile: config.keyFile)
            }, onFenced: { [self] in commitFenced() })
    }

    /// The owned partitions' sessions, with the subscriber's connection settings.
    func partitionSessions(_ claim: PartitionClaim, base: MQTTClientConfiguration, shards: [Shard], routing: ShardRouting) -> PartitionInputService {
        let partitioning = partitioning(of: claim)
        return PartitionInputService(
            partitions: claim.partitions, partitioning: partitioning, base: base, layout: layout, shards: shards, routing: routing, log: log
        ) { [self] e, k in
            switch e {
            case .subscribed:
                partitionLinks.subscribed(k)
                log.info("partition session subscribed", ["partition": String(k)])
            case .disconnected, .refused: partitionLinks.lost(k, now: clock.uptimeNanoseconds())
            case .connected: break
            }
            connectionEvent(e, role: "partition \(k)")
        }
    }
}

extension Daemon {
    /// A shard's commit was fenced: another instance raised the token of a partition this run
    /// holds (it took the partition over while this process was paused or cut off). Nothing of
    /// that commit was written, and no commit of this run can succeed again, so the run stops at
    /// once — its partition sessions first, so that nothing more is taken or acknowledged —
    /// instead of failing every batch until the next heartbeat; the supervisor is woken to
    /// heartbeat now, learns which leases are left and rejoins on them. Once per run.
    func commitFenced() {
        guard !fenced.exchange(true, ordering: .sequentiallyConsistent) else { return }
        log.warn("a commit was fenced: another instance took over a partition of this run; stopping its processing to rejoin")
        requestStop()
        onFenced?()
    }

    /// Whether this run stopped because a commit was fenced (not a failure: the supervisor rejoins).
    package var wasFenced: Bool { fenced.load(ordering: .sequentiallyConsistent) }

    /// The run could not start because the store did not answer (``Restore/storeUnavailable``):
    /// noted for the supervisor, which starts the run again once the store answers instead of
    /// ending the process, since a shared store's restart is an outage, not damage. Exit code 1.
    func noteStoreUnavailable() -> Int32 {
        storeUnavailable.store(true, ordering: .sequentiallyConsistent)
        return 1
    }

    /// Whether this run failed because the store did not answer (``noteStoreUnavailable()``).
    package var failedOnUnavailableStore: Bool { storeUnavailable.load(ordering: .sequentiallyConsistent) }
}
