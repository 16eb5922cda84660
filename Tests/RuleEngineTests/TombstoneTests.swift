import EngineTestSupport
import MobilityModel
import RuleLanguage
import TestSupport
import Testing

@testable import RuleEngine

/// Deletions that overtake their samples, re-sends after a deletion, and sync versions in
/// reverse order (order across a failover is not guaranteed).
@Suite struct TombstoneTests {
    static let rules = EngineTests.rules

    static func versioned(_ id: String, _ value: Double, version: Int, day: Int = 1) -> Sample {
        sample(id, value, day: day, metadata: [MetadataKey.syncIdentifier: .string("K"), MetadataKey.syncVersion: .number(Double(version))])
    }

    /// Day 1's `n` and `speed` series after feeding `steps` (each a sample, or a deletion of ids).
    enum Step { case sample(Sample), delete([String]) }
    static func dayOne(_ steps: [Step], restartAfter: Int? = nil) -> (n: Double?, speed: Double?, outcomes: [IngestOutcome]) {
        var engine = Engine(program: program(rules))
        var out: [EngineOutput] = []
        var outcomes: [IngestOutcome] = []
        for (k, step) in steps.enumerated() {
            switch step {
            case .sample(let s): outcomes.append(engine.ingest(s, user: "u", now: close(1).adding(seconds: -7200), into: &out))
            case .delete(let ids): engine.delete(ids: ids, user: "u", now: close(1).adding(seconds: -7200))
            }
            if k == restartAfter {
                var next = Engine(program: program(rules))
                next.restore(engine.snapshot(of: "u")!)
                engine = next
            }
        }
        engine.advance(to: close(1), into: &out)
        return (out.series("n")[1] ?? nil, out.series("speed")[1] ?? nil, outcomes)
    }

    @Test func aDeletionBeforeItsSampleDropsTheSample() {
        let a = sample("a", 1.2, day: 1), b = sample("b", 0.9, day: 1)
        let inOrder = Self.dayOne([.sample(a), .sample(b), .delete(["a"])])
        let overtaken = Self.dayOne([.delete(["a"]), .sample(a), .sample(b)])
        #expect(inOrder.n == 1)
        #expect(overtaken.n == inOrder.n)
        #expect(overtaken.speed == inOrder.speed)
        #expect(overtaken.outcomes == [.deleted, .accepted])
        // The deletion is the user's first message (a new user): remembered all the same.
        var engine = Engine(program: program(Self.rules))
        var out: [EngineOutput] = []
        #expect(engine.delete(ids: ["x"], user: "new") == 0)
        #expect(engine.ingest(sample("x", 1, day: 1), user: "new", now: close(1), into: &out) == .deleted)
    }

    @Test func aSampleReSentAfterItsDeletionStaysDeleted() {
        let a = sample("a", 1.2, day: 1), b = sample("b", 0.9, day: 1)
        let r = Self.dayOne([.sample(a), .sample(b), .delete(["a"]), .sample(a)])
        #expect(r.n == 1)
        #expect(r.outcomes.last == .deleted)
    }

    @Test func syncVersionsInEitherOrderEndTheSame() {
        let v1 = Self.versioned("v1", 1.0, version: 1), v2 = Self.versioned("v2", 1.5, version: 2)
        let inOrder = Self.dayOne([.sample(v1), .sample(v2)])
        let reversed = Self.dayOne([.sample(v2), .sample(v1)])
        #expect(inOrder.speed == 1.5)
        #expect(reversed.speed == inOrder.speed && reversed.n == inOrder.n)
        #expect(reversed.outcomes == [.accepted, .stale])
        // Across a restart between the two.
        let restarted = Self.dayOne([.sample(v2), .sample(v1)], restartAfter: 0)
        #expect(restarted.speed == 1.5 && restarted.n == 1 && restarted.outcomes == [.accepted, .stale])
    }

    @Test func aDeletedNewerVersionStillSupersedesTheOlderOneInAnyOrder() {
        // In order: v1, v2 (replaces v1), deletion of v2 → nothing of K is left.
        let v1 = Self.versioned("v1", 1.0, version: 1), v2 = Self.versioned("v2", 1.5, version: 2), c = sample("c", 0.7, day: 1)
        let inOrder = Self.dayOne([.sample(c), .sample(v1), .sample(v2), .delete(["v2"])])
        #expect(inOrder.n == 1 && inOrder.speed == 0.7)
        let orders: [[Step]] = [
            [.sample(c), .delete(["v2"]), .sample(v1), .sample(v2)],
            [.sample(c), .delete(["v2"]), .sample(v2), .sample(v1)],
            [.sample(c), .sample(v2), .delete(["v2"]), .sample(v1)],
            [.sample(c), .sample(v1), .delete(["v2"]), .sample(v2)]
        ]
        for (k, steps) in orders.enumerated() {
            let r = Self.dayOne(steps)
            #expect(r.n == inOrder.n && r.speed == inOrder.speed, "order \(k)")
            let restarted = Self.dayOne(steps, restartAfter: 1)
            #expect(restarted.n == inOrder.n && restarted.speed == inOrder.speed, "order \(k), restart")
        }
    }

    @Test func tombstonesSurviveARestartAndGoWhenTheirDayFolds() {
        var engine = Engine(program: program(Self.rules))
        var out: [EngineOutput] = []
        engine.ingest(sample("b", 1, day: 1), user: "u", now: close(1).adding(seconds: -7200), into: &out)
        engine.delete(ids: ["a", "b"], user: "u", now: close(1).adding(seconds: -7200))
        #expect(engine.state(of: "u")!.tombstones.map(\.id) == [SampleID("a"), SampleID("b")])
        var restarted = Engine(program: program(Self.rules))
        restarted.restore(engine.snapshot(of: "u")!)
        #expect(restarted.ingest(sample("a", 1, day: 1), user: "u", now: close(1).adding(seconds: -7200), into: &out) == .deleted)
        // Within the lateness (7 d) plus the fold margin they stay; then they go with their day.
        restarted.advance(to: close(8), into: &out)
        #expect(restarted.state(of: "u")!.tombstones.count == 2)
        restarted.advance(to: close(9), into: &out)
        #expect(restarted.state(of: "u")!.tombstones.isEmpty)
    }

    @Test func aSyncEntryKeptOnlyByADeletionGoesWithIt() {
        var engine = Engine(program: program(Self.rules))
        var out: [EngineOutput] = []
        engine.delete(ids: ["v2"], user: "u", now: close(1).adding(seconds: -7200))
        #expect(engine.ingest(Self.versioned("v2", 1.5, version: 2), user: "u", now: close(1).adding(seconds: -7200), into: &out) == .deleted)
        #expect(engine.state(of: "u")!.syncIndex.count == 1)  // v1 must still be stale
        #expect(engine.ingest(Self.versioned("v1", 1.0, version: 1), user: "u", now: close(1).adding(seconds: -7200), into: &out) == .stale)
        engine.advance(to: close(10), into: &out)
        #expect(engine.state(of: "u")!.syncIndex.isEmpty)
        #expect(engine.state(of: "u")!.tombstones.isEmpty)
    }

    @Test func oneUsersTombstonesAreBounded() {
        var c = EngineConfiguration()
        c.maxTombstones = 64
        var engine = Engine(program: program(Self.rules), configuration: c)
        for k in 0..<10 { engine.delete(ids: (0..<100).map { "d\(k)-\($0)" }, user: "u", now: close(1)) }
        let t = engine.state(of: "u")!.tombstones
        #expect(t.count <= 64 && t.count > 56)
        #expect(t.last?.id == SampleID("d9-99"))  // the newest are kept
        // A repeated deletion adds nothing.
        engine.delete(ids: ["d9-99", "d9-99"], user: "u", now: close(1))
        #expect(engine.state(of: "u")!.tombstones.count == t.count)
    }

    @Test func aTombstoneMadeBeforeTheUsersClockIsStampedAtTheFirstClose() {
        var engine = Engine(program: program(Self.rules))
        var out: [EngineOutput] = []
        engine.delete(ids: ["early"], user: "u")  // no clock, no day yet
        #expect(engine.state(of: "u")!.tombstones.first?.day == Tombstone.unstamped)
        engine.ingest(sample("s", 1, day: 1), user: "u", now: close(1).adding(seconds: -7200), into: &out)
        engine.advance(to: close(1), into: &out)
        #expect(engine.state(of: "u")!.tombstones.first?.day == day0 + 2)
        #expect(engine.ingest(sample("early", 1, day: 2), user: "u", now: close(2).adding(seconds: -7200), into: &out) == .deleted)
    }
}

/// A deletion of many ids is one pass over the user's open values and one hash lookup a
/// tombstone (it was a scan and a shift per id: a flood of 1 000-id deletions held a shard for
/// a minute); it must end exactly as the same ids deleted one a message.
@Suite struct LargeDeletionTests {
    static func engine(maxTombstones: Int) -> Engine {
        var c = EngineConfiguration()
        c.maxTombstones = maxTombstones
        var e = Engine(program: program(EngineTests.rules), configuration: c)
        var out: [EngineOutput] = []
        for d in 1...5 {
            for k in 0..<40 {
                e.ingest(sample("s\(d)-\(k)", 1.0 + Double(k) / 100, day: d, hour: k % 24), user: "u", now: close(5).adding(seconds: -7200), into: &out)
            }
        }
        return e
    }

    @Test(arguments: [64, 2048] as [Int])
    func aLargeDeletionEndsAsItsIdsOneByOne(maxTombstones: Int) {
        var rng = SplitMix64(seed: 33 &+ UInt64(maxTombstones))
        // Held ids, unknown ids and repeats, in random order.
        var ids: [String] = []
        for _ in 0..<600 {
            switch rng.next() % 3 {
            case 0: ids.append("s\(1 + rng.next() % 5)-\(rng.next() % 40)")
            case 1: ids.append("gone-\(rng.next() % 400)")
            default: ids.append(ids.isEmpty ? "x" : ids[Int(rng.next() % UInt64(ids.count))])
            }
        }
        var bulk = Self.engine(maxTombstones: maxTombstones), single = Self.engine(maxTombstones: maxTombstones)
        let now = close(5).adding(seconds: -3600)
        let removed = bulk.delete(ids: ids, user: "u", now: now)
        var removedOneByOne = 0
        for id in ids { removedOneByOne += single.delete(ids: [id], user: "u", now: now) }
        #expect(removed == removedOneByOne && removed > 0)
        let a = bulk.snapshot(of: "u")!, b = single.snapshot(of: "u")!
        #expect(a.openValues == b.openValues)
        #expect(a.openDays == b.openDays)
        #expect(a.tombstones == b.tombstones)
        #expect(a == b)
        // The tombstones are those of a plain list: each new id appended, the oldest eighth dropped at the limit.
        var reference: [SampleID] = []
        for id in ids.map(SampleID.init) where !reference.contains(id) {
            if reference.count >= maxTombstones { reference.removeFirst(max(1, min(reference.count, maxTombstones / 8))) }
            reference.append(id)
        }
        #expect(a.tombstones.map(\.id) == reference)
        // What was deleted stays deleted.
        var out: [EngineOutput] = []
        #expect(bulk.ingest(sample(ids.last!, 1.1, day: 5), user: "u", now: now, into: &out) == .deleted)
    }
}
