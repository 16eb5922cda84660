import Foundation
import Ingest
import MobilityWire
import RuleEngine
import StateStore
import TestSupport
import Testing

@testable import MobilityDaemon

/// A shard handed a long queue at once works through it in batches bounded by work, and
/// releases the journal only as far as it has handled.
@Suite struct BatchBudgetTests {
    static let layout = TopicLayout()

    @Test func theBudgetCountsMessagesAndBytes() {
        var b = BatchBudget()
        for _ in 0..<(BatchBudget.maxMessages - 1) { b.message(bytes: 10) }
        #expect(!b.spent)
        b.message(bytes: 10)
        #expect(b.spent)
        var big = BatchBudget()
        big.message(bytes: BatchBudget.maxBytes - 1)
        #expect(!big.spent)
        big.message(bytes: 1)
        #expect(big.spent && big.messages == 2)
    }

    /// A shard over a fresh store and journal, with the shipped rules (event clock), not started.
    static func shard(_ dir: String) throws -> (Shard, IngestJournal) {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let program = try ReportWorkerTests.program()
        let store = try StateStore(path: dir + "/state.sqlite")
        let journal = try IngestJournal(directory: dir + "/journal")
        let shard = Shard(
            index: 0,
            ingestor: Ingestor(
                engine: Engine(program: program, configuration: DaemonConfiguration().engine), layout: layout, clock: .event, boundedByWallClock: true),
            capacity: 100_000, sink: ReportWorkerTests.Captured(), store: store, journal: journal, acks: PublishTracker(),
            log: Logger(format: .logfmt, level: .error))
        return (shard, journal)
    }

    /// Queues journalled messages as the daemon's network thread does, then a barrier; starts the
    /// shard and waits for the barrier.
    static func run(_ shard: Shard, _ journal: IngestJournal, _ messages: [(String, [UInt8])]) throws {
        for (topic, payload) in messages {
            let seq = try journal.append(topic: topic, payload: payload)
            shard.queue.push(.message(seq: seq, topic: topic, parsed: layout.parse(topic), payload: payload))
            journal.markQueued(seq)
        }
        let done = DispatchSemaphore(value: 0)
        shard.queue.push(.barrier(done))
        shard.start()
        done.wait()
    }

    @Test func manySmallMessagesQueuedAtOnceAreSeveralBatches() throws {
        let dir = TemporaryPath.make("mw-budget")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (shard, journal) = try Self.shard(dir)
        let messages = (0..<3_500).map { k in
            (samplesTopic("u\(k % 50)"), Array(sampleJSON(id: "s\(k)", value: 1.2, end: "2026-04-01T12:00:00Z").utf8))
        }
        try Self.run(shard, journal, messages)
        let stats = shard.stats.withLock { $0 }
        #expect(stats.ingest.messages == 3_500)
        #expect(stats.batches >= 4, "\(stats.batches) batches for 3 500 messages queued at once")
        #expect(shard.committedThrough.load(ordering: .relaxed) == 3_500)
        shard.queue.close()
        shard.join()
    }

    @Test func largeMessagesQueuedAtOnceAreSeveralBatches() throws {
        let dir = TemporaryPath.make("mw-budget")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (shard, journal) = try Self.shard(dir)
        // 60 deletions of 1 000 ids (~47 KB each, ~2.8 MB): at least three batches of 1 MiB.
        let messages = (0..<60).map { m in ("mobility/v1/users/flood/deletions", Array(DeletionFloodTests.deletion(m).utf8)) }
        try Self.run(shard, journal, messages)
        let stats = shard.stats.withLock { $0 }
        #expect(stats.ingest.messages == 60)
        #expect(stats.batches >= 3, "\(stats.batches) batches for 60 large messages queued at once")
        #expect(shard.committedThrough.load(ordering: .relaxed) == 60)
        shard.queue.close()
        shard.join()
    }
}
