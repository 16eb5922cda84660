import Foundation
import MobilityModel
import RuleEngine
import RuleLanguage
import Synchronization

/// What a shard's thread is asked to do.
enum ShardItem: Sendable {
    case message(topic: String, payload: [UInt8])
    /// Wall clock: close the days that ended.
    case tick(Timestamp)
    case reload(Program)
    /// Signalled once everything queued before it has been processed and published.
    case barrier(DispatchSemaphore)
}

/// Counters a shard keeps for `/metrics`, updated once per batch.
struct ShardStats: Sendable {
    var ingest = IngestCounters()
    var users = 0
    var batches = 0
    var evaluationSeconds = 0.0
    var alerts: [String: [AlertStatus: Int]] = [:]
    var repeats: [String: Int] = [:]
    var firing: [String: Int] = [:]
    var seriesPublished = 0
    var publishErrors = 0
}

/// Where a shard sends what the engine wants published.
protocol OutputSink: Sendable {
    /// Publishes outputs in order; returns how many failed.
    func publish(_ outputs: [EngineOutput]) -> Int
}

/// One worker: a thread that alone owns an `Ingestor` (and so its users' state), fed by a bounded queue.
///
/// Sendability: `ingestor` is only touched by the shard's own thread (in `run`); `stats` is a Mutex.
final class Shard: @unchecked Sendable {
    let index: Int
    let queue: BoundedQueue<ShardItem>
    let stats = Mutex(ShardStats())
    private var ingestor: Ingestor
    private let sink: any OutputSink
    private let finished = DispatchSemaphore(value: 0)
    private let log: Logger

    init(index: Int, ingestor: Ingestor, capacity: Int, sink: any OutputSink, log: Logger) {
        self.index = index
        self.ingestor = ingestor
        self.queue = BoundedQueue(capacity: capacity)
        self.sink = sink
        self.log = log
    }

    func start() {
        let t = Thread { [self] in run() }
        t.name = "shard-\(index)"
        t.start()
    }

    /// Waits until the thread has drained a closed queue.
    func join() { finished.wait() }

    private func run() {
        var out: [EngineOutput] = []
        out.reserveCapacity(256)
        while let batch = queue.popAll() {
            // One clock read per batch, not per message.
            let started = DispatchTime.now().uptimeNanoseconds
            let wall = Timestamp(milliseconds: Int64(Date().timeIntervalSince1970 * 1000))
            var barriers: [DispatchSemaphore] = []
            var reloaded: Set<String>?
            for item in batch {
                switch item {
                case .message(let topic, let payload): ingestor.handle(topic: topic, payload: payload, now: wall, into: &out)
                case .tick(let now): ingestor.tick(now: now, into: &out)
                case .reload(let p):
                    ingestor.engine.reload(p)
                    reloaded = Set(p.alerts.map(\.name))
                case .barrier(let s): barriers.append(s)
                }
            }
            let evaluated = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            let failures = out.isEmpty ? 0 : sink.publish(out)
            stats.withLock { s in
                s.batches += 1
                s.evaluationSeconds += evaluated
                s.ingest = ingestor.counters
                s.users = ingestor.engine.users.count
                s.publishErrors += failures
                if let keep = reloaded { s.firing = s.firing.filter { keep.contains($0.key) } }
                for o in out {
                    switch o {
                    case .alert(let a):
                        if a.isRepeat { s.repeats[a.rule, default: 0] += 1; continue }
                        s.alerts[a.rule, default: [:]][a.status, default: 0] += 1
                        s.firing[a.rule, default: 0] += a.status == .firing ? 1 : -1
                    case .series: s.seriesPublished += 1
                    case .rejected: break
                    }
                }
            }
            if failures > 0 { log.warn("publish failed", ["shard": String(index), "failures": String(failures)]) }
            out.removeAll(keepingCapacity: true)
            for b in barriers { b.signal() }
        }
        finished.signal()
    }
}
