import Foundation
import Ingest
import MobilityModel
import MobilityWire
import RuleEngine
import RuleLanguage
import StateStore
import Synchronization
import TestSupport
import Testing

@testable import MobilityDaemon

/// A shard run in-process as the daemon runs one (the shipped rules, event clock, a real SQLite
/// store in `dir`, its users restored from it at start), on a manual clock, with what it
/// publishes captured: no broker, no process. Stopping and starting another harness on the same
/// directory is a restart.
final class ShardHarness {
    /// What the shards of every harness on a directory published, in order, and the broker's view
    /// of it: the retained message of each topic.
    final class Published: OutputSink, @unchecked Sendable {
        private let state = Mutex<(items: [StateStore.OutboxItem], retained: [String: [UInt8]])>(([], [:]))
        func publish(_ items: [StateStore.OutboxItem]) -> Int {
            state.withLock { s in
                for i in items {
                    s.items.append(i)
                    if i.retain { s.retained[i.topic] = i.payload.isEmpty ? nil : i.payload }
                }
            }
            return 0
        }
        /// Everything published on topics starting with `prefix`, in order.
        func messages(prefix: String = "") -> [StateStore.OutboxItem] { state.withLock { $0.items }.filter { $0.topic.hasPrefix(prefix) } }
        /// What a subscriber to `prefix…` would get first: the retained messages, by topic.
        func retained(prefix: String = "") -> [String: [UInt8]] { state.withLock { $0.retained }.filter { $0.key.hasPrefix(prefix) } }
    }

    let dir: String
    let shard: Shard
    let published: Published
    private var seq: UInt64

    /// 2026-12-01T00:00:00Z: every sample the tests send is in the past.
    static let wall = Timestamp(milliseconds: 1_796_083_200_000)

    /// Starts a shard on `dir` (created if needed), publishing to `published`, taking the timeline
    /// commands of `timelines` when given.
    init(
        dir: String, careTeams: CareTeams = CareTeams(), historyDays: Int? = 90, publishesSeries: Bool = true, published: Published = Published(),
        timelines: TimelineDesk? = nil
    ) throws {
        self.dir = dir
        self.published = published
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let program = try ReportWorkerTests.program()
        let config = DaemonConfiguration().engine
        let store = try StateStore(path: dir + "/state.sqlite")
        let wall = Self.wall
        let clock = DaemonClock(wall: { wall }, uptimeNanoseconds: { DispatchTime.now().uptimeNanoseconds })
        shard = Shard(
            index: 0,
            ingestor: Ingestor(engine: Engine(program: program, configuration: config), layout: TopicLayout(), clock: .event, boundedByWallClock: true),
            capacity: 100_000, sink: published, store: store, journal: nil, acks: PublishTracker(), log: Logger(format: .logfmt, level: .error),
            historyDays: historyDays, publishesSeries: publishesSeries, careTeams: careTeams, desks: Shard.StaffDesks(timelines: timelines),
            clock: clock)
        var users = try store.load(alertNames: program.alerts.map(\.name), prepare: Engine(program: program, configuration: config).preparer).users
        seq = users.map(\.appliedSeq).max() ?? 0
        for i in users.indices { shard.restore(&users[i]) }
        shard.start()
    }

    /// Sends messages and waits until the shard has committed and published what they produced.
    func send(_ messages: [(topic: String, payload: String)]) { send(bytes: messages.map { ($0.topic, Array($0.payload.utf8)) }) }

    /// Sends messages and waits until the shard has committed and published what they produced.
    func send(bytes messages: [(topic: String, payload: [UInt8])]) {
        for m in messages {
            seq += 1
            shard.queue.push(.message(seq: seq, topic: m.topic, parsed: TopicLayout().parse(m.topic), payload: m.payload))
        }
        let done = DispatchSemaphore(value: 0)
        shard.queue.push(.barrier(done))
        done.wait()
    }

    /// Reloads the rules (as SIGHUP does) and waits until the shard has committed and published
    /// what the reload produced.
    func reload(_ program: Program) {
        shard.queue.push(.reload(program))
        let done = DispatchSemaphore(value: 0)
        shard.queue.push(.barrier(done))
        done.wait()
    }

    /// Stops the shard after its last commit.
    func stop() {
        shard.queue.close()
        shard.join()
    }

    /// The shard's counters.
    var stats: ShardStats { shard.stats.withLock { $0 } }
}
