import Dispatch
import Foundation
import JetStreamAccess
import MobilityWire
import PostgresStore
import Synchronization

/// Partitioned input consumed natively from JetStream (`--intake jetstream`): for each owned
/// partition a durable pull consumer of the stream NATS's MQTT listener keeps QoS 1 messages in
/// (`$MQTT_msgs`), filtered to the partition's inputs, on a thread of its own. A batch is fetched,
/// each message handed to the partition's shard with its stream sequence, the batch committed by
/// that shard in one transaction with the partition's stream sequence (fenced, like every write
/// of the partition), and only then acknowledged (cumulatively, through its last message).
///
/// Order and redelivery are this service's, not the broker's settings': each run makes a consumer
/// of its own (`{session prefix}{k}-{token}-{run}-{n}`, anew after a failed fetch or a skipped
/// delivery) starting after the recorded sequence, and deletes the partition's earlier consumers
/// once the server has its acknowledgement of a batch, or it answered idle (until then they keep
/// the stream's messages too). A message at or below what this run already handed on (a
/// redelivery) is skipped, and so is one at or below the stream sequence its user's committed
/// state applied (by the shard: a second guard, the state and the partition's position being
/// committed together).
///
/// Stopping revokes the partitions: a batch waiting for its commit is not acknowledged, and none
/// is fetched after.
///
/// Sendability: everything is immutable, atomic, or in a Mutex; each partition's consumer is
/// used only by its own thread.
final class PartitionStreamService: Service, @unchecked Sendable {
    let name = "partition consumers"
    /// The stream NATS's MQTT listener keeps QoS 1 messages in.
    static let stream = "$MQTT_msgs"
    /// The most messages fetched (and committed) at once per partition.
    static let batch = 512
    /// The longest a fetch waits for messages (it returns once the server has no more to give;
    /// and so how soon a revoked thread notices).
    static let fetchTimeoutMs: Int64 = 500
    /// The longest a look at the server's account of a consumer (``JetStreamPullConsumer/position(timeoutMs:)``)
    /// holds the partition's fetches: while the consumer's leader is being elected it is not
    /// answered, and the partition's messages may flow again before the request's 5 s default ends.
    static let positionTimeoutMs: Int64 = 1000
    /// The longest a request that makes a partition's consumer (the stream's state, the
    /// consumer's making) waits before it is made again: while the cluster elects a leader it is
    /// not answered, and made again once one is elected it is answered at once, where the
    /// requests' 5 s default held the partition up to 5 s more.
    static let makeTimeoutMs: Int64 = 2000

    private let claim: PartitionClaim
    private let partitioning: Partitioning
    private let layout: TopicLayout
    private let shards: [Shard]
    private let routing: ShardRouting
    private let store: PostgresStore
    private let log: Logger
    private let links: PartitionLinks
    private let maxPayloadBytes: Int
    /// `--commit-interval` (ns), at most ``ShardCommitPolicy/longestStreamWaitMs``: how long a
    /// partition with no more input waiting behind its batch waits before its next fetch (``BatchLinger``).
    private let commitIntervalNs: UInt64
    private let clock: DaemonClock
    private let connect: @Sendable () throws(JetStreamFailure) -> NATSConnection
    private let onFenced: @Sendable () -> Void
    /// How long a partition's consumer may make no progress while its node answers before the
    /// partition counts as cut off: JetStream unavailable to this instance (its node on the
    /// minority side of a split), not the seconds a cluster takes to elect leaders.
    private let stallBoundNs: UInt64
    /// When each partition's consumer last made progress (the run started, a batch fetched or
    /// acknowledged, the server answered that it runs with nothing to deliver).
    private let progress = Mutex<[Int: UInt64]>([:])
    private let revoked = Atomic<Bool>(false)
    private let connection = Mutex<NATSConnection?>(nil)
    private let done = Mutex<[DispatchSemaphore]>([])
    /// Names this run's consumers apart from an earlier run's of the same token.
    private let run = String(UInt32.random(in: 0...UInt32.max), radix: 36)
    /// Consumers named by this run (each made anew under a new name: ``open(_:named:filter:)``).
    private let opened = Atomic<Int>(0)
    /// Messages of a user the broker put in another partition than ours: the mappings disagree.
    let mismatched = Atomic<Int>(0)
    /// What the run's consumers did, for `/metrics` (``intake(now:)``).
    private let counts = Mutex(StreamIntakeCounts())

    init(
        claim: PartitionClaim, partitioning: Partitioning, layout: TopicLayout, shards: [Shard], routing: ShardRouting, store: PostgresStore, log: Logger,
        links: PartitionLinks, maxPayloadBytes: Int, commitIntervalMs: Int, clock: DaemonClock, leaseMs: Int,
        connect: @escaping @Sendable () throws(JetStreamFailure) -> NATSConnection, onFenced: @escaping @Sendable () -> Void
    ) {
        self.stallBoundNs = UInt64(max(3 * leaseMs, 30_000)) * 1_000_000
        self.claim = claim
        self.partitioning = partitioning
        self.layout = layout
        self.shards = shards
        self.routing = routing
        self.store = store
        self.log = log
        self.links = links
        self.maxPayloadBytes = maxPayloadBytes
        self.commitIntervalNs = UInt64(min(commitIntervalMs, ShardCommitPolicy.longestStreamWaitMs)) * 1_000_000
        self.clock = clock
        self.connect = connect
        self.onFenced = onFenced
    }

    func start() throws {
        let now = clock.uptimeNanoseconds()
        progress.withLock { p in for k in claim.partitions.owned { p[k] = now } }
        for (k, token) in zip(claim.partitions.owned, claim.tokens) {
            let finished = DispatchSemaphore(value: 0)
            done.withLock { $0.append(finished) }
            let t = Thread { [self] in
                consume(k, token: token)
                finished.signal()
            }
            t.name = "partition-\(k)"
            t.start()
        }
        let finished = DispatchSemaphore(value: 0)
        done.withLock { $0.append(finished) }
        let w = Thread { [self] in
            watch()
            finished.signal()
        }
        w.name = "partition-link"
        w.start()
    }

    /// What tells this instance cut off from its broker: its NATS node not answering a PING
    /// (every 250 ms, each given a second) — a lost node, or this machine cut off from it — marks
    /// every owned partition without its broker at once. A consumer that cannot be made or
    /// fetched from while the node answers is most often the cluster's passing trouble (leader
    /// elections after a node's loss) which another instance would meet too: it is retried, and
    /// counts only after ``stallBoundNs`` without progress (JetStream unavailable to this node:
    /// the minority side of a split). Counting it at once would have the survivor of a node's
    /// loss give up and reclaim every lease in a loop while the cluster elects, each run making
    /// new consumers and so prolonging the elections.
    private func watch() {
        var reported = Set<Int>()
        var answered: Bool?
        var reconnects: UInt64 = 0
        while !isRevoked {
            let nats = connection.withLock { $0 }
            let answers = nats?.answers(timeoutMs: 1000)
            if let nats, nats.isConnected, case let n = nats.reconnects, n > reconnects {
                // Said even when no look found the node silent (a reconnection between two looks).
                log.info("the NATS connection reconnected", ["nats": nats.connectedURL ?? "?", "reconnections": String(n)])
                reconnects = n
            }
            if let answers, answers != answered, !isRevoked {
                // Said when it changes: a node lost or frozen, and the node the connection moved to.
                if answers {
                    if answered != nil { log.info("the NATS node answers again", ["nats": nats?.connectedURL ?? "?"]) }
                } else {
                    log.warn(
                        "the NATS node does not answer; the partitions count as without their broker until a node does",
                        ["nats": nats?.connectedURL ?? "none (reconnecting)"])
                }
                answered = answers
            }
            let now = clock.uptimeNanoseconds()
            let last = progress.withLock { $0 }
            for k in claim.partitions.owned {
                let stalled = answers == true && last[k].map { now >= $0 && now - $0 >= stallBoundNs } == true
                if stalled, reported.insert(k).inserted {
                    log.warn(
                        "the partition's JetStream consumer made no progress while its node answers; counting the partition as cut off",
                        ["partition": String(k), "for_s": String(stallBoundNs / 1_000_000_000)])
                }
                switch answers {
                case true? where !stalled:
                    links.subscribed(k)
                    reported.remove(k)
                case true?, false?: links.lost(k, now: now)
                case nil: break  // no connection made yet: each partition's first attempt says
                }
            }
            pause(ms: 250)
        }
    }

    /// What the run's consumers did, and each owned partition's seconds since its consumer last
    /// made progress at `now` (uptime, ns).
    func intake(now: UInt64) -> (counts: StreamIntakeCounts, sinceProgress: [Int: Double]) {
        let last = progress.withLock { $0 }
        return (counts.withLock { $0 }, last.mapValues { now >= $0 ? Double(now - $0) / 1e9 : 0 })
    }

    /// Partition `k`'s consumer made progress at `now`.
    private func progressed(_ k: Int) {
        let now = clock.uptimeNanoseconds()
        progress.withLock { $0[k] = now }
    }

    func stop() {
        revoked.store(true, ordering: .sequentiallyConsistent)
        // Closing the connection returns every fetch and consumer request waiting on it at once
        // (a lost node's would wait out its timeout, and a thread still inside libnats when the
        // process exits can crash it). A thread stuck in a store call is left behind: it hands
        // nothing on and records nothing once revoked.
        connection.withLock { $0 }?.close()
        let deadline = DispatchTime.now() + .seconds(3)
        for d in done.withLock({ $0 }) { _ = d.wait(timeout: deadline) }
    }

    private var isRevoked: Bool { revoked.load(ordering: .relaxed) }

    /// Waits until `ns` (uptime) or until revoked.
    private func hold(until ns: UInt64) {
        while !isRevoked, case let now = clock.uptimeNanoseconds(), now < ns { usleep(UInt32(min(ns - now, 50_000_000) / 1000)) }
    }

    /// Waits `ms` or until revoked.
    private func pause(ms: Int) { hold(until: clock.uptimeNanoseconds() + UInt64(ms) * 1_000_000) }

    /// The run's NATS connection, made on first use (libnats reconnects it, to the `--nats` nodes
    /// only, for as long as it lives).
    private func natsConnection() throws(JetStreamFailure) -> NATSConnection {
        if let c = connection.withLock({ $0 }) { return c }
        let c = try connect()
        let kept = connection.withLock { held -> NATSConnection? in
            // Made as stop() closed the run's connection: closed too, never used.
            if isRevoked { return nil }
            if let h = held { return h }
            held = c
            return c
        }
        guard let kept else {
            c.close()
            throw JetStreamFailure(description: "the partition consumers were stopped")
        }
        return kept
    }

    /// Partition `k`'s consumer loop, until revoked or fenced.
    private func consume(_ k: Int, token: Int64) {
        let filter = JetStreamInspector.subject(partitioning.subscriptions(of: k, root: layout.root)[0])
        let prefix = partitioning.prefix(of: k)
        var consumer: JetStreamPullConsumer?
        // The highest stream sequence handed to the shards; at the top of the loop, all of it is committed.
        var taken: UInt64 = 0
        var reported: String?
        // The consumer's last delivery number taken (its deliveries count from 1), how long its
        // fetches have come back empty, and when the partition's earlier consumers were deleted.
        var delivered: UInt64 = 0
        var idle = IdleConsumer()
        var retirement = ConsumerRetirement()
        // The last message the consumer was acknowledged through (not waited for: sent again when idle).
        var lastAcknowledged: JetStreamPullConsumer.Message?
        var linger = BatchLinger(intervalNs: commitIntervalNs)
        // The name of the consumer being made, kept while its making times out: made again under
        // it, a making that went through late is bound instead of left behind.
        var making: String?
        while !isRevoked {
            guard let c = consumer else {
                let name = making ?? "\(partitioning.consumerPrefix(of: k))\(token)-\(run)-\(opened.add(1, ordering: .relaxed).newValue)"
                let tried = clock.uptimeNanoseconds()
                do {
                    (consumer, taken) = try open(k, named: name, filter: filter)
                    making = nil
                    counts.withLock { c in
                        c.consumersMade += 1
                        c.committed[k] = taken
                    }
                    (delivered, lastAcknowledged) = (0, nil)
                    retirement = ConsumerRetirement()
                    idle.reset()
                    // Made as stop() closed the connection: the partition's next consumer deletes it.
                    if isRevoked { return }
                    reported = nil
                    log.info("partition consumer ready", ["partition": String(k), "consumer": consumer?.name ?? "", "from_seq": String(taken + 1)])
                } catch let e as PostgresError where e.code == .fenced {
                    onFenced()
                    return
                } catch {
                    // No connection could be made at all: the node is not there (once made,
                    // the watcher's pings tell).
                    if connection.withLock({ $0 }) == nil { links.lost(k, now: clock.uptimeNanoseconds()) }
                    if reported != "\(error)" {
                        log.warn("cannot open the partition's JetStream consumer; trying again", ["partition": String(k), "error": "\(error)"])
                        reported = "\(error)"
                    }
                    // Not answered in time by a node the connection is on (a leader being elected):
                    // asked again at once, the same consumer. A failure that did not wait (a
                    // connection refused), or the connection down, waits a second as any other.
                    let waited = clock.uptimeNanoseconds() &- tried >= UInt64(Self.makeTimeoutMs / 2) * 1_000_000
                    if (error as? JetStreamFailure)?.timedOut == true, waited, connection.withLock({ $0 })?.isConnected == true {
                        making = name
                    } else {
                        making = nil
                        pause(ms: 1000)
                    }
                }
                continue
            }
            let fetched: [JetStreamPullConsumer.Message]
            hold(until: linger.nextFetchNs)
            if isRevoked { return }
            let started = clock.uptimeNanoseconds()
            do { fetched = try c.fetch(max: Self.batch, timeoutMs: Self.fetchTimeoutMs) } catch {
                log.warn("partition consumer lost; opening it again", ["partition": String(k), "error": error.description])
                counts.withLock { $0.remade[.fetchFailed, default: 0] += 1 }
                consumer = nil
                pause(ms: 500)
                continue
            }
            if isRevoked { return }
            // More of the partition's input waits at the server: the batch commits at once and the
            // next fetch follows its commit.
            let backlog = BatchLinger.backlog(count: fetched.count, of: Self.batch)
            linger.fetched(fetched.count, backlog: backlog, startedAt: started)
            // Only deliveries in the consumer's own unbroken order are taken: one that never
            // arrived (a fetch's answer lost in a leader change, say) would be acknowledged by
            // the cumulative acknowledgement of a later one, its messages skipped for good; and
            // JetStream would redeliver it only after its ack_wait, behind later messages.
            var n = 0
            while n < fetched.count, fetched[n].delivery == delivered + UInt64(n) + 1 { n += 1 }
            let inOrder = fetched[..<n], broken = n < fetched.count
            guard let top = inOrder.max(by: { $0.sequence < $1.sequence }) else {
                if broken {
                    reopen(
                        &consumer, partition: k, .deliveriesSkipped, reason: "delivery \(fetched[0].delivery) came when \(delivered + 1) was due",
                        after: taken)
                } else if idle.emptyFetch(now: clock.uptimeNanoseconds()), let p = try? c.position(timeoutMs: Self.positionTimeoutMs) {
                    // Progress: the server answers that the consumer is running (not a consumer
                    // made anew again and again, nor one holding messages it does not deliver).
                    let finding = idle.look(p, delivered: delivered)
                    if finding == .live || finding == .quiet { progressed(k) }
                    switch finding {
                    case .stalled:
                        reopen(
                            &consumer, partition: k, .stalled,
                            reason: "the server counts \(p.lastDelivery) deliveries and \(p.undelivered) undelivered messages; \(delivered) arrived",
                            after: taken)
                    case .live where p.replicasCurrent: retire(k, c, token: token, &retirement)
                    case .live: break
                    case .quiet, .withheld:
                        // An acknowledgement lost with a leader: sent again, not left to the redelivery after ack_wait.
                        if let m = lastAcknowledged, p.acknowledgedThrough < m.sequence { try? c.acknowledge(through: m) }
                    }
                }
                continue
            }
            progressed(k)
            idle.reset()
            delivered = inOrder.last?.delivery ?? delivered
            // Committed with the partition's stream sequence by the shard (retried there until the
            // store takes it, or the run stops); nothing to commit for redeliveries alone.
            if top.sequence > taken {
                guard let w = hand(inOrder, after: taken, through: top.sequence, partition: k, prefix: prefix, backlog: backlog),
                    w.wait(abandoned: { isRevoked })
                else {
                    return
                }
            }
            if isRevoked { return }
            let handed = inOrder.lazy.filter { $0.sequence > taken }.count
            taken = max(taken, top.sequence)
            counts.withLock { $0.committed[k] = taken }
            do {
                // Through the highest stream sequence taken: acknowledging a lower one (a
                // redelivery after ack_wait) would acknowledge nothing.
                // Sent a batch ago: by now the server has most likely handled it.
                let earlier = lastAcknowledged
                try c.acknowledge(through: top)
                lastAcknowledged = top
                progressed(k)
                counts.withLock { c in
                    c.messages += handed
                    c.batches += 1
                }
                // The server has this consumer's acknowledgement of an earlier batch (they are not
                // waited for) and every replica is current; asked at most once a second, given a second.
                if let earlier, retirement.isDue(now: clock.uptimeNanoseconds()) {
                    if let p = try? c.position(timeoutMs: Self.positionTimeoutMs), p.replicasCurrent, p.acknowledgedThrough >= earlier.sequence {
                        retire(k, c, token: token, &retirement)
                    }
                    retirement.checked(now: clock.uptimeNanoseconds())
                }
            } catch {
                log.warn("cannot acknowledge a committed batch; a later acknowledgement covers it", ["partition": String(k), "error": error.description])
            }
            if broken { reopen(&consumer, partition: k, .deliveriesSkipped, reason: "a delivery after \(delivered) never arrived", after: taken) }
        }
    }

    /// Drops partition `k`'s consumer whose deliveries broke their order; the next turn makes
    /// one anew after the committed sequence (this one is deleted once that one has
    /// acknowledged a batch or answered idle).
    private func reopen(
        _ consumer: inout JetStreamPullConsumer?, partition k: Int, _ kind: StreamIntakeCounts.Remade, reason: String, after taken: UInt64
    ) {
        counts.withLock { $0.remade[kind, default: 0] += 1 }
        log.warn(
            "the partition's JetStream consumer skipped deliveries; opening it again after the committed sequence",
            ["partition": String(k), "consumer": consumer?.name ?? "", "why": reason, "after_seq": String(taken)])
        consumer = nil
    }

    /// Deletes partition `k`'s consumers older than `current` (``retireOlder(_:than:token:)``)
    /// and notes when.
    private func retire(_ k: Int, _ current: JetStreamPullConsumer, token: Int64, _ retirement: inout ConsumerRetirement) {
        guard retirement.isDue(now: clock.uptimeNanoseconds()) else { return }
        retirement.attempted(succeeded: retireOlder(k, than: current.name, token: token), now: clock.uptimeNanoseconds())
    }

    /// Makes this run's consumer of partition `k`, `name`, starting after the stream sequence the
    /// store has the partition committed through (the earlier consumers are deleted once it has
    /// acknowledged a batch or answered idle: ``retireOlder(_:than:token:)``).
    private func open(_ k: Int, named name: String, filter: String) throws -> (JetStreamPullConsumer, UInt64) {
        let nats = try natsConnection()
        let mark = try store.streamMarks()[k] ?? PostgresStore.StreamMark(sequence: 0, created: 0)
        let stream = try nats.streamState(stream: Self.stream, timeoutMs: Self.makeTimeoutMs)
        let committed = mark.created == stream.created ? mark.sequence : 0
        if mark.created == 0 {
            // Never consumed from JetStream: a user's applied sequence is then an ingest
            // journal's (the partition was consumed over MQTT), and a stream sequence at or
            // below it would be skipped as applied.
            let users = try store.usersWithAppliedInput(partition: k)
            guard users == 0 else {
                throw JetStreamFailure(
                    description:
                        "partition \(k) was never consumed from \(Self.stream) but \(users) of its users have applied input up to a sequence of another intake, and stream messages at or below it would be skipped; with every instance stopped, run: UPDATE users SET applied_seq = 0 WHERE partition = \(k);"
                )
            }
            try store.recordStreamIdentity(stream.created, partition: k)
        } else if mark.created != stream.created || mark.sequence > stream.lastSequence {
            throw JetStreamFailure(
                description:
                    "partition \(k) is committed through sequence \(mark.sequence) of a stream \(Self.stream) made at \(mark.created) ns but the stream now was made at \(stream.created) ns and ends at \(stream.lastSequence): it was deleted and made again, and its sequences no longer match the store's; with every instance stopped, run: UPDATE partitions SET stream_seq = 0, stream_created = 0 WHERE partition = \(k); UPDATE users SET applied_seq = 0 WHERE partition = \(k);"
            )
        }
        // A new consumer each time (a new name), never the one a fetch failed on: that one may
        // hold messages delivered and not acknowledged, which JetStream would hand out again only
        // after its ack_wait, behind later ones.
        let consumer = try JetStreamPullConsumer(
            connection: nats, stream: Self.stream, name: name, filter: filter, startSequence: committed + 1, timeoutMs: Self.makeTimeoutMs,
            unused: true)
        return (consumer, committed)
    }

    /// Deletes partition `k`'s consumers older than `current` (an earlier owner's, or an earlier
    /// run's: a token at most `token`; a later owner's is left to it), once `current` has
    /// acknowledged an earlier batch or, without traffic, answered that it delivered all it had.
    /// Not before: the stream (retention *interest*) removes the messages no consumer it knows
    /// of still needs when one is deleted, and in a cluster electing leaders a consumer just made
    /// may not be known yet on the stream's leader — deleting the old ones then can remove the
    /// partition's uncommitted messages for good. Returns whether every older one is gone.
    private func retireOlder(_ k: Int, than current: String, token: Int64) -> Bool {
        let mine = partitioning.consumerPrefix(of: k)
        do {
            let nats = try natsConnection()
            for n in try nats.consumerNames(stream: Self.stream) where n != current && n.hasPrefix(mine) {
                guard let t = n.dropFirst(mine.utf8.count).split(separator: "-").first.flatMap({ Int64($0) }), t <= token else { continue }
                try nats.deleteConsumer(stream: Self.stream, name: n)
            }
            return true
        } catch {
            log.warn(
                "cannot delete the partition's earlier JetStream consumers; trying again", ["partition": String(k), "error": "\(error)"])
            return false
        }
    }

    /// Hands partition `k`'s messages after `taken` to its shard, in order, then a commit waiter
    /// that has the commit record the partition's stream sequence `through`, all at once (another
    /// partition of the shard never comes between them: the shard commits a hand-off's messages
    /// only with its waiter); `backlog`: more of the partition's input waits, so the shard commits at once.
    /// Nil when the shard no longer takes work (the run is stopping).
    private func hand(
        _ messages: ArraySlice<JetStreamPullConsumer.Message>, after taken: UInt64, through: UInt64, partition k: Int, prefix: String, backlog: Bool
    ) -> CommitWaiter? {
        var items: [ShardItem] = []
        items.reserveCapacity(messages.count + 1)
        for m in messages where m.sequence > taken {
            guard let topic = JetStreamInspector.topic(ofSubject: m.subject), topic.hasPrefix(prefix) else { continue }
            let inner = String(topic.dropFirst(prefix.utf8.count))
            let parsed = layout.parse(inner)
            if case .inbound(let user, _) = parsed, claim.partitions.partition(of: user) != k {
                if mismatched.add(1, ordering: .relaxed).oldValue == 0 {
                    log.error(
                        "the broker's partition of a user differs from ours; dropping its messages (check the mapping: partition(P,1) with P = --partitions)",
                        ["partition": String(k), "ours": String(claim.partitions.partition(of: user))])
                }
                continue
            }
            items.append(
                m.payload.count > maxPayloadBytes
                    ? .oversized(topic: inner, parsed: parsed, size: m.payload.count)
                    : .message(seq: m.sequence, topic: inner, parsed: parsed, payload: m.payload))
        }
        let w = CommitWaiter(streamSequence: (k, through), backlog: backlog)
        items.append(.durable(w))
        return shards[routing.shard(ofPartition: k) ?? 0].queue.pushAll(items) ? w : nil
    }
}

/// How long a partition's consumer has fetched nothing, and what the server's account of it
/// then says: every ``checkNs`` of empty fetches it is asked. More deliveries counted than
/// arrived (or fewer: a new leader numbering again) mean deliveries lost in flight (with a
/// fetch's answer, in a leader change of the consumer) that the server would redeliver only
/// after its ack_wait, if at all. Messages held undelivered although every delivery arrived are
/// looked at once more before they count the same: a consumer leader elected after a node's
/// loss serves the next fetch, and a consumer made anew while the cluster elects waits for the
/// election too. Otherwise the consumer is running with nothing to deliver, and —
/// everything taken acknowledged — live.
struct IdleConsumer {
    /// How long fetches come back empty before the server is asked.
    static let checkNs: UInt64 = 5_000_000_000
    private var since: UInt64?
    /// The last look found messages held undelivered, every delivery having arrived.
    private var withheld = false

    enum Finding: Equatable {
        /// Deliveries lost in flight, or messages still held at a second look: make the consumer anew.
        case stalled
        /// Messages held undelivered, every delivery having arrived: look again (and send the
        /// last acknowledgement again, should its loss hold the consumer at its limit of
        /// unacknowledged messages).
        case withheld
        /// Running, every delivery taken and acknowledged.
        case live
        /// Running, an acknowledgement still owed (a later batch's covers it).
        case quiet
    }

    /// A batch arrived.
    mutating func reset() { (since, withheld) = (nil, false) }

    /// After an empty fetch at `now` (uptime, ns): whether to ask the server now.
    mutating func emptyFetch(now: UInt64) -> Bool {
        guard let s = since else {
            since = now
            return false
        }
        guard now &- s >= Self.checkNs else { return false }
        since = now
        return true
    }

    /// What the server's `position` of an idle consumer says, `delivered` deliveries having arrived.
    mutating func look(_ position: JetStreamPullConsumer.Position, delivered: UInt64) -> Finding {
        if position.lastDelivery != delivered { return .stalled }
        guard position.undelivered == 0 else {
            defer { withheld = true }
            return withheld ? .stalled : .withheld
        }
        withheld = false
        return position.pendingAcknowledgement == 0 ? .live : .quiet
    }
}

/// When a partition's next fetch may start: the commit interval (`--commit-interval`) after the
/// start of one that brought some messages with no more input waiting behind them, so that a
/// consumer that keeps up with its gateways takes what they sent meanwhile in one batch, instead of paying a
/// commit (each user's state written again), a fetch and an acknowledgement every few messages.
/// A fetch returns as soon as the server has nothing more to give, so how many messages a batch
/// holds would otherwise depend on how fast the instance happens to commit — on how many
/// partitions it holds and how loaded it is. After a fetch with more input waiting behind it
/// (``backlog(count:of:)``), or an empty one (which waited for the first messages),
/// at once. A message waits at most the interval (at most a second) more
/// for its commit, as with the single-node daemon's group commit; `--commit-interval 0` fetches
/// again at once.
struct BatchLinger {
    /// The commit interval (ns).
    let intervalNs: UInt64
    /// Uptime (ns) before which the next fetch waits.
    private(set) var nextFetchNs: UInt64 = 0

    init(intervalNs: UInt64) { self.intervalNs = intervalNs }

    /// Whether more of a partition's input waits behind a fetch that brought `count` messages
    /// of at most `batch`: only a full batch says so. The server's count of what it still holds
    /// behind a fetch's last message does not: on live traffic messages arrive while a fetch is
    /// delivered, so a fetch of a few messages often has more pending, and committing each at
    /// once took 3.7 messages a commit on one node at 700 a second, where the interval gathers 44.
    static func backlog(count: Int, of batch: Int) -> Bool { count >= batch }

    /// A fetch started at `startedAt` brought `count` messages; `backlog`: more were waiting
    /// behind them (``backlog(count:of:)``).
    mutating func fetched(_ count: Int, backlog: Bool, startedAt: UInt64) {
        nextFetchNs = count > 0 && !backlog ? startedAt + intervalNs : 0
    }
}

/// When a partition's consumers older than its current one were last deleted: first once the
/// current one has acknowledged a batch or answered live (with every replica current), then
/// again every ``intervalNs`` (a consumer whose making completed only after its run stopped, or
/// a stale owner's, would otherwise keep the partition's messages in the stream for good).
struct ConsumerRetirement {
    static let intervalNs: UInt64 = 60_000_000_000
    /// The least time between two looks at the server's account before a deletion.
    static let checkNs: UInt64 = 1_000_000_000
    private var lastNs: UInt64?
    private var checkedNs: UInt64?

    /// Whether a deletion is due at `now` (uptime, ns).
    func isDue(now: UInt64) -> Bool {
        (lastNs.map { now &- $0 >= Self.intervalNs } ?? true) && (checkedNs.map { now &- $0 >= Self.checkNs } ?? true)
    }

    /// The server's account was asked at `now` whether a deletion may go ahead.
    mutating func checked(now: UInt64) { checkedNs = now }

    /// A deletion was tried at `now`; one that failed is due again at once.
    mutating func attempted(succeeded: Bool, now: UInt64) { lastNs = succeeded ? now : nil }
}

/// What a run's JetStream consumers did (`/metrics`).
struct StreamIntakeCounts: Sendable {
    /// Why a partition's consumer was made anew.
    enum Remade: String, Sendable, CaseIterable {
        /// A fetch failed (its leader lost with its node, the connection down).
        case fetchFailed = "fetch_failed"
        /// A delivery never arrived (a skipped delivery number).
        case deliveriesSkipped = "deliveries_skipped"
        /// Idle while the server counted other deliveries than arrived, or held messages
        /// undelivered at two looks in a row.
        case stalled
    }
    /// Messages handed to the shards, committed and acknowledged (redeliveries skipped not counted).
    var messages = 0
    /// Batches committed and acknowledged.
    var batches = 0
    /// Consumers made (one per partition at the run's start, and one each time one is made anew).
    var consumersMade = 0
    var remade: [Remade: Int] = [:]
    /// Each partition's stream sequence as this run last recorded it committed (or found it, at its consumer's making).
    var committed: [Int: UInt64] = [:]
}
