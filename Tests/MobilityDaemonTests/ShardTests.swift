import Foundation
import Ingest
import MobilityModel
import MobilityWire
import RuleEngine
import StateStore
import Synchronization
import TestSupport
import Testing

@testable import MobilityDaemon

/// A shard run in-process (a real SQLite store and journal, no broker, no process) with a manual
/// clock: the wall clock it is given is the engine's "now", and its batches are timed on the
/// monotonic clock it is given.
@Suite struct ShardTests {
    /// A clock a test sets: the wall clock stays where it is put; the monotonic clock moves
    /// `step` nanoseconds at each read, and when the test advances it.
    final class ManualClock: Sendable {
        private let wallMs: Atomic<Int64>
        private let uptime = Atomic<UInt64>(1_000_000_000)
        private let step: UInt64

        init(wallMs: Int64, step: UInt64) {
            self.wallMs = Atomic(wallMs)
            self.step = step
        }

        /// Moves the monotonic clock on.
        func advance(nanoseconds: UInt64) { uptime.add(nanoseconds, ordering: .relaxed) }

        var clock: DaemonClock {
            DaemonClock(
                wall: { Timestamp(milliseconds: self.wallMs.load(ordering: .relaxed)) },
                uptimeNanoseconds: { self.uptime.add(self.step, ordering: .relaxed).newValue })
        }
    }

    /// A sample that ends at 2026-04-01T12:00:00Z.
    static let sample = (samplesTopic("u1"), Array(sampleJSON(id: "s1", value: 1.2, end: "2026-04-01T12:00:00Z").utf8))

    /// Runs `messages` through a fresh shard (shipped rules, event clock bounded by the wall
    /// clock) on `clock`; returns its counters and what it published, once it stopped.
    static func run(_ messages: [(String, [UInt8])], clock: DaemonClock) throws -> (ShardStats, [StateStore.OutboxItem]) {
        let dir = TemporaryPath.make("mw-shard")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let program = try ReportWorkerTests.program()
        let journal = try IngestJournal(directory: dir + "/journal")
        let sink = ReportWorkerTests.Captured()
        let shard = Shard(
            index: 0,
            ingestor: Ingestor(
                engine: Engine(program: program, configuration: DaemonConfiguration().engine), layout: TopicLayout(), clock: .event,
                boundedByWallClock: true),
            capacity: 1000, sink: sink, store: try StateStore(path: dir + "/state.sqlite"), journal: journal, acks: PublishTracker(),
            log: Logger(format: .logfmt, level: .error), clock: clock)
        try BatchBudgetTests.run(shard, journal, messages)
        shard.queue.close()
        shard.join()
        return (shard.stats.withLock { $0 }, sink.items.withLock { $0 })
    }

    /// The same sample is refused as in the future before the wall clock reaches it, and accepted
    /// after: the shard's "now" is the clock it was given.
    @Test func theWallClockGivenBoundsWhatIsInTheFuture() throws {
        let march = ManualClock(wallMs: 1_772_366_400_000, step: 1)  // 2026-03-01T12:00:00Z
        let (before, published) = try Self.run([Self.sample], clock: march.clock)
        #expect(before.ingest.rejected[.inFuture] == 1)
        #expect(before.ingest.samplesAccepted == 0)
        let rejected = published.filter { $0.topic == TopicLayout().rejected("u1") }
        #expect(rejected.count == 1 && String(decoding: rejected[0].payload, as: UTF8.self).contains("in_future"))

        let april = ManualClock(wallMs: 1_775_048_400_000, step: 1)  // 2026-04-01T13:00:00Z
        let (after, _) = try Self.run([Self.sample], clock: april.clock)
        #expect(after.ingest.rejected[.inFuture] == nil)
        #expect(after.ingest.samplesAccepted == 1)
    }

    /// A shard of the shipped rules on the event clock, committing to `store`, its outputs
    /// captured and read by nobody; not started.
    static func shard(
        store: any StateBackend, journal: IngestJournal? = nil, commitIntervalMs: Int = 0, keeper: ShardCommitPolicy.Keeper? = nil, clock: DaemonClock = .system
    ) throws -> Shard {
        Shard(
            index: 0,
            ingestor: Ingestor(
                engine: Engine(program: try ReportWorkerTests.program(), configuration: DaemonConfiguration().engine), layout: TopicLayout(),
                clock: .event, boundedByWallClock: true),
            capacity: 100_000, sink: ReportWorkerTests.Captured(), store: store, journal: journal, acks: PublishTracker(),
            log: Logger(format: .logfmt, level: .error), commitIntervalMs: commitIntervalMs, clock: clock, keeper: keeper)
    }

    /// A store in a directory of its own, which records what each commit applied.
    static func controlledStore() throws -> ReportWorkerTests.ControlledStore {
        let dir = TemporaryPath.make("mw-shard")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return ReportWorkerTests.ControlledStore(try StateStore(path: dir + "/state.sqlite"))
    }

    /// Partition `k`'s hand-off of one sample of `user`, and its commit waiter (stream sequence 10 k).
    static func handOff(_ k: Int, user: String, backlog: Bool = false) -> (items: [ShardItem], waiter: CommitWaiter) {
        let layout = TopicLayout(), topic = layout.samples(user)
        let payload = Array(sampleJSON(id: "s\(k)", value: 1.2, end: "2026-04-01T12:00:00Z").utf8)
        let w = CommitWaiter(streamSequence: (partition: k, sequence: UInt64(10 * k)), backlog: backlog)
        return ([.message(seq: 0, topic: topic, parsed: layout.parse(topic), payload: payload), .durable(w)], w)
    }

    /// Hands partitions 1 and 2 (users u1 and u2) to a started shard, each once the one before
    /// was handled, `after(k)` checked after each; their waiters. `backlogSecond`: the second
    /// has more input waiting behind it.
    static func handTwoOff(_ shard: Shard, backlogSecond: Bool = false, after: (Int) -> Void = { _ in }) -> [CommitWaiter] {
        [(1, "u1"), (2, "u2")].map { k, u in
            let (items, w) = handOff(k, user: u, backlog: backlogSecond && k == 2)
            #expect(shard.queue.pushAll(items))
            #expect(eventually(timeout: 10) { shard.stats.withLock { $0.ingest.samplesAccepted } == k })
            after(k)
            return w
        }
    }

    /// Without a journal (a partition's input) the messages of a hand-off are committed only
    /// with the waiter behind them, whose partition's stream sequence that commit records: handled
    /// before their waiter came (a batch's budget split the hand-off), they wait for it, so no
    /// user's state is committed ahead of its partition's recorded position.
    @Test func aPartitionsMessagesAreCommittedOnlyWithTheirWaitersStreamSequence() throws {
        let store = try Self.controlledStore()
        let shard = try Self.shard(store: store, clock: ManualClock(wallMs: 1_775_048_400_000, step: 1).clock)
        shard.start()
        defer {
            shard.queue.close()
            shard.join()
        }
        let layout = TopicLayout()
        for (i, u) in ["u1", "u2", "u3"].enumerated() {
            let topic = layout.samples(u)
            let payload = Array(sampleJSON(id: "s\(i)", value: 1.2, end: "2026-04-01T12:00:00Z").utf8)
            #expect(shard.queue.push(.message(seq: UInt64(101 + i), topic: topic, parsed: layout.parse(topic), payload: payload)))
        }
        // Taken and handled without their waiter: nothing committed.
        #expect(eventually(timeout: 10) { shard.stats.withLock { $0.ingest.samplesAccepted } == 3 })
        #expect(store.commits.withLock { $0.isEmpty })
        let w = CommitWaiter(streamSequence: (partition: 5, sequence: 103))
        #expect(shard.queue.push(.durable(w)))
        #expect(w.wait(abandoned: { false }))
        let commits = store.commits.withLock { $0 }
        #expect(commits.count == 1)
        #expect(commits.first?.applied == ["u1": 101, "u2": 102, "u3": 103] && commits.first?.streamSequences == [5: 103], "\(commits)")
    }

    /// Fed by JetStream partitions (the stream keeps each batch until its waiter is answered),
    /// a shard commits the hand-offs of an interval together: two partitions' batches, handed
    /// in one after the other, are one commit with both stream positions — made when the
    /// interval is due although nothing else arrives (the shard wakes for it).
    @Test func streamHandOffsOfAnIntervalAreOneCommit() throws {
        let store = try Self.controlledStore()
        let intervalMs = 500
        let shard = try Self.shard(store: store, commitIntervalMs: intervalMs, keeper: .stream)
        let started = DispatchTime.now().uptimeNanoseconds
        shard.start()
        defer {
            shard.queue.close()
            shard.join()
        }
        // The first hand-off is handled before the second comes: without the stream's wait it
        // would be committed on its own.
        let waiters = Self.handTwoOff(shard)
        // Abandoned after 10 s: a shard that never woke for the interval fails here instead of hanging.
        let deadline = DispatchTime.now() + .seconds(10)
        for w in waiters { #expect(w.wait(abandoned: { DispatchTime.now() > deadline }), "the interval's commit never came") }
        let took = DispatchTime.now().uptimeNanoseconds - started
        let commits = store.commits.withLock { $0 }
        #expect(commits.count == 1, "\(commits)")
        #expect(commits.first?.streamSequences == [1: 10, 2: 20] && commits.first.map { Set($0.applied.keys) } == ["u1", "u2"], "\(commits)")
        #expect(took >= UInt64(intervalMs - 50) * 1_000_000, "committed \(took / 1_000_000) ms after the start")
    }

    /// A hand-off with more input waiting behind it (``CommitWaiter/backlog``) is committed at once,
    /// with what waited for the interval: on a clock that never moves the interval is never due,
    /// so the first partition's hand-off waits until the second's, with more behind it, comes.
    @Test func aHandOffWithMoreInputBehindItIsCommittedAtOnce() throws {
        let store = try Self.controlledStore()
        let frozen = ManualClock(wallMs: 1_775_048_400_000, step: 0)
        let shard = try Self.shard(store: store, commitIntervalMs: 100, keeper: .stream, clock: frozen.clock)
        shard.start()
        defer {
            shard.queue.close()
            shard.join()
        }
        let waiters = Self.handTwoOff(shard, backlogSecond: true) { k in
            if k == 1 { #expect(store.commits.withLock { $0.isEmpty }, "a hand-off without a backlog was committed before its interval") }
        }
        let deadline = DispatchTime.now() + .seconds(10)
        for w in waiters { #expect(w.wait(abandoned: { DispatchTime.now() > deadline }), "the hand-offs were never committed") }
        let commits = store.commits.withLock { $0 }
        #expect(commits.count == 1 && commits.first?.streamSequences == [1: 10, 2: 20], "\(commits)")
    }

    /// A batch ends inside a hand-off (its budget, 1 000 messages, is spent) and so cannot
    /// commit although it took a waiter with more input behind it: the first batch whose waiters
    /// have all come commits at once, though its own waiter has nothing behind it (the clock
    /// never moves, so only that can commit them).
    @Test func moreInputBehindAWaiterIsRememberedAcrossBatches() throws {
        let store = try Self.controlledStore()
        let shard = try Self.shard(store: store, commitIntervalMs: 100, keeper: .stream, clock: ManualClock(wallMs: 1_775_048_400_000, step: 0).clock)
        let layout = TopicLayout()
        var waiters: [CommitWaiter] = []
        for (k, u) in [(1, "u1"), (2, "u2")] {
            let topic = layout.samples(u)
            var items: [ShardItem] = (0..<600).map { i in
                let end = "2026-04-01T10:\(String(format: "%02d:%02d", i / 60, i % 60))Z"
                let payload = Array(sampleJSON(id: "s\(k)-\(i)", value: 1.2, end: end).utf8)
                return .message(seq: 0, topic: topic, parsed: layout.parse(topic), payload: payload)
            }
            let w = CommitWaiter(streamSequence: (partition: k, sequence: UInt64(600 * k)), backlog: k == 1)
            waiters.append(w)
            items.append(.durable(w))
            #expect(shard.queue.pushAll(items))
        }
        shard.start()  // one take: 600 + waiter + 400, then 200 + waiter
        defer {
            shard.queue.close()
            shard.join()
        }
        let deadline = DispatchTime.now() + .seconds(10)
        for w in waiters { #expect(w.wait(abandoned: { DispatchTime.now() > deadline }), "the hand-offs were never committed") }
        let commits = store.commits.withLock { $0 }
        #expect(commits.count == 1 && commits.first?.streamSequences == [1: 600, 2: 1200], "\(commits)")
        // Every sample taken (no rejection) and no day closed (no alert): no output could have
        // made the second batch commit; only the first waiter's backlog did.
        #expect(shard.stats.withLock { $0.ingest.samplesAccepted } == 1200)
    }

    /// A batch reads the monotonic clock when it starts, after ingest and after its commit: with
    /// a clock that moves one second a read, each batch evaluated for 1 s and took 2 s.
    @Test func batchesAreTimedOnTheMonotonicClockGiven() throws {
        let clock = ManualClock(wallMs: 1_775_048_400_000, step: 1_000_000_000)
        let (stats, _) = try Self.run([Self.sample], clock: clock.clock)
        #expect(stats.batches >= 1)
        #expect(stats.evaluationSeconds == Double(stats.batches))
        #expect(stats.longestBatchSeconds == 2)
    }
}
