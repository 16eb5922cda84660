import Foundation
import MobilityModel
import MobilityWire
import PostgresStore
import RuleEngine
import RuleLanguage
import StateStore

/// `mobility-bench store-commits --postgres URL`: the cost of one shard commit (a batch of users'
/// changes and their outputs) in the SQLite store and in PostgreSQL, the same commits to both.
/// Started by `scripts/bench-postgres.sh`, which runs a private PostgreSQL (fsync on).
enum StoreCommits {
    static func run(postgres url: String, program: Program, users: Int, batches: Int) throws {
        let dir = NSTemporaryDirectory() + "mw-bench-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let sqlite = try StateStore(path: dir + "/state.sqlite", autoCheckpoint: false)  // as mobilityd: checkpoints off the commit path
        let postgres = try PostgresStore(url: url, owner: "mobility-bench")
        var engine = Engine(program: program)
        var out: [EngineOutput] = []
        let day0: Int64 = 20_500
        let ids = (0..<users).map { "user-\($0)" }
        var clock = day0 * 86_400 + 8 * 3600
        func sample(_ u: Int) -> Sample {
            clock += 1
            let t = Timestamp(seconds: clock)
            return Sample(id: "s\(clock)", metric: .walkingSpeed, value: 1.0 + Double(u % 30) / 100, start: t, end: t)
        }
        // Every user with a morning of samples, committed once to both (not timed).
        for (u, id) in ids.enumerated() { for _ in 0..<20 { engine.ingest(sample(u), user: id, now: Timestamp(seconds: clock), into: &out) } }
        let all = ids.map { StateStore.UserRecord(user: $0, appliedSeq: 1, eventNow: nil, state: engine.changes(of: $0)) }
        _ = try sqlite.commit(users: all, outbox: [])
        _ = try postgres.commit(users: all, outbox: [], acknowledged: [], history: [])
        for id in ids { engine.markPersisted(id) }
        print("store commits: \(users) users; per batch: each user one new sample, one output per 10 users (300 bytes)")
        var next = 0, seq: UInt64 = 2
        for size in [1, 10, 100, 1000] where size <= users {
            var a: [Double] = [], b: [Double] = []
            for k in 0..<batches {
                let batch = (0..<size).map { _ in
                    defer { next = (next + 1) % users }; return next
                }
                for u in batch { engine.ingest(sample(u), user: ids[u], now: Timestamp(seconds: clock), into: &out) }
                let records = batch.map { StateStore.UserRecord(user: ids[$0], appliedSeq: seq, eventNow: nil, state: engine.changes(of: ids[$0])) }
                let outbox = (0..<max(1, size / 10)).map {
                    StateStore.OutboxItem(topic: TopicLayout().alert("user-\($0)", rule: "x"), payload: [UInt8](repeating: 0x41, count: 300), retain: true)
                }
                seq += 1
                // Alternated, so that neither always runs first.
                if k % 2 == 0 {
                    a.append(time { _ = try! sqlite.commit(users: records, outbox: outbox) })
                    b.append(time { _ = try! postgres.commit(users: records, outbox: outbox, acknowledged: [], history: []) })
                } else {
                    b.append(time { _ = try! postgres.commit(users: records, outbox: outbox, acknowledged: [], history: []) })
                    a.append(time { _ = try! sqlite.commit(users: records, outbox: outbox) })
                }
                for u in batch { engine.markPersisted(ids[u]) }
                if k % 20 == 19 { try sqlite.checkpoint() }
            }
            a.sort()
            b.sort()
            func ms(_ xs: [Double], _ q: Double) -> String { String(format: "%.3f", xs[min(xs.count - 1, Int(Double(xs.count) * q))] * 1000) }
            print(
                "  batch of \(String(size).padding(toLength: 5, withPad: " ", startingAt: 0)) users: SQLite median \(ms(a, 0.5)) ms p90 \(ms(a, 0.9)) ms | PostgreSQL median \(ms(b, 0.5)) ms p90 \(ms(b, 0.9)) ms | ratio \(String(format: "%.1f", b[b.count / 2] / a[a.count / 2]))"
            )
        }
    }

    static func time(_ body: () -> Void) -> Double {
        let t = DispatchTime.now().uptimeNanoseconds
        body()
        return Double(DispatchTime.now().uptimeNanoseconds - t) / 1e9
    }
}
