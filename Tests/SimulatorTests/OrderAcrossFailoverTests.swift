import Foundation
import Ingest
import MobilityModel
import RuleEngine
import RuleLanguage
import Simulator
import TestSupport
import Testing

/// Across a failover order is not guaranteed, so the engine must end the same when a
/// deletion overtakes its sample, a sample is re-sent after its deletion, or a newer sync
/// version arrives before the older one — within the allowed lateness, and across a restart.
/// Each shipped scenario's stream, with deletions and sync versions added, is fed in order and
/// in several permutations; the alerts and each day's last published series must be equal.
@Suite struct OrderAcrossFailoverTests {
    static let program: Program = {
        let (sources, _) = RuleSet.load([RepoPaths.rules])
        return Checker.check(sources).program!
    }()

    /// One message of the stream; `target` links a deletion or a sync version to the message
    /// whose sample it is about (the baseline puts it right after that message).
    struct Message {
        var record: TrafficRecord
        var at: Timestamp
        var day: DayNumber
    }

    /// The stream in publish order plus what was added: (index of the deletion, index of the
    /// message holding its sample) and (index of the older version, index of the newer one).
    struct Stream {
        var messages: [Message] = []
        var deletions: [(deletion: Int, sample: Int)] = []
        var versions: [(older: Int, newer: Int)] = []
    }

    static func object(_ v: JSONValue) -> [(String, JSONValue)] { if case .object(let o) = v { return o } else { return [] } }

    /// The sample `s` with members replaced or added (metadata merged).
    static func edited(_ s: JSONValue, id: String, value: Double? = nil, metadata: [(String, JSONValue)]) -> JSONValue {
        var o = object(s).filter { $0.0 != "id" && $0.0 != "metadata" && (value == nil || $0.0 != "value") }
        o.append(("id", .string(id)))
        if let value { o.append(("value", .number(value))) }
        o.append(("metadata", .object(object(s["metadata"] ?? .object([])) + metadata)))
        return .object(o)
    }

    /// A scenario's traffic with a deletion right after every 11th samples message (of its last
    /// sample) and, for every 13th, its first walking-speed sample as sync version 2 published
    /// right after a version 1 of it (another id, 60 % of the value): the baseline order, where
    /// everything comes before its day closes.
    static func stream(_ path: String) throws -> Stream {
        let scenario = try Scenario.load(path)
        let timed = scenario.generator.generate()
        let cal = try #require(LocalCalendar.cached(scenario.persona.timeZone))
        var s = Stream()
        var samplesSeen = 0
        let isSpeed = { (v: JSONValue) in v["type"] == .string("walkingSpeed") || v["type"] == .string("HKQuantityTypeIdentifierWalkingSpeed") }
        for t in timed {
            let day = cal.day(of: t.at)
            guard t.record.topic.hasSuffix("/samples"), case .success(let payload) = JSONValue.parse(t.record.payload),
                case .array(var items) = payload
            else {
                s.messages.append(Message(record: t.record, at: t.at, day: day))
                continue
            }
            samplesSeen += 1
            let user = t.record.topic.split(separator: "/")[3]
            if samplesSeen % 13 == 0, let k = items.firstIndex(where: isSpeed),
                case .string(let id)? = items[k]["id"], case .number(let v)? = items[k]["value"]
            {
                let sync = ("HKMetadataKeySyncIdentifier", JSONValue.string("sync-\(id)"))
                let older = edited(items[k], id: id + "-v1", value: v * 0.6, metadata: [sync, ("HKMetadataKeySyncVersion", .number(1))])
                items[k] = edited(items[k], id: id, metadata: [sync, ("HKMetadataKeySyncVersion", .number(2))])
                s.messages.append(Message(record: TrafficRecord(topic: t.record.topic, payload: Array(JSONValue.array([older]).text.utf8)), at: t.at, day: day))
                s.messages.append(Message(record: TrafficRecord(topic: t.record.topic, payload: Array(JSONValue.array(items).text.utf8)), at: t.at, day: day))
                s.versions.append((s.messages.count - 2, s.messages.count - 1))
                continue
            }
            s.messages.append(Message(record: t.record, at: t.at, day: day))
            // Of walking speed: a per-sample rule (six-minute walk) has already answered a
            // sample that is deleted after it; only an overtaking deletion can prevent that.
            if samplesSeen % 11 == 0, let last = items.last(where: isSpeed), case .string(let id)? = last["id"] {
                s.messages.append(
                    Message(
                        record: TrafficRecord(topic: "mobility/v1/users/\(user)/deletions", payload: Array("{\"ids\":[\"\(id)\"]}".utf8)), at: t.at, day: day))
                s.deletions.append((s.messages.count - 1, s.messages.count - 2))
            }
        }
        return s
    }

    /// What a run ends with: every alert transition, each (series, day)'s last value, and the counters.
    struct Result: Equatable {
        var alerts: [String]
        var series: [String: String]
    }

    /// Feeds `order` (indices into the stream's messages); with `restartAt`, the state goes through
    /// a snapshot into a new ingestor after that many messages, as a failover's successor loads it.
    static func run(_ s: Stream, order: [Int], restartAt: Int? = nil) -> (Result, IngestCounters) {
        func fresh() -> Ingestor { Ingestor(engine: Engine(program: program), clock: .event) }
        var ing = fresh()
        var out: [EngineOutput] = []
        for (n, k) in order.enumerated() {
            if n == restartAt {
                var next = fresh()
                for user in ing.clockedUsers {
                    next.restore(user: user, state: ing.engine.snapshot(of: user), eventNow: ing.eventNow(user), claims: ing.clocks[user]?.claims ?? [])
                }
                ing = next
            }
            ing.handle(topic: s.messages[k].record.topic, payload: s.messages[k].record.payload, now: Timestamp(milliseconds: 0), into: &out)
        }
        ing.closeOpenDays(into: &out)
        var r = Result(alerts: [], series: [:])
        for o in out {
            switch o {
            case .alert(let a): r.alerts.append(a.json)
            case .series(let p): r.series["\(p.user) \(p.name) \(p.day)"] = p.value.map { "\($0) \(p.unit)" } ?? "null"
            case .rejected: break
            }
        }
        return (r, ing.counters)
    }

    /// The order with message `k` moved to position `to` (before what was there).
    static func moving(_ order: [Int], _ k: Int, before target: Int) -> [Int] {
        var o = order
        o.remove(at: o.firstIndex(of: k)!)
        o.insert(k, at: o.firstIndex(of: target)!)
        return o
    }

    static func scenarios() throws -> [String] {
        let dir = RepoPaths.root + "/simulator/scenarios"
        return try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".scenario") }.sorted().map { dir + "/" + $0 }
    }

    @Test(arguments: try scenarios())
    func deletionsBeforeSamplesAndReversedVersionsEndTheSame(path: String) throws {
        let s = try Self.stream(path)
        let name = (path as NSString).lastPathComponent
        try #require(s.deletions.count >= 3 && s.versions.count >= 3, "\(name): the stream should hold deletions and versions")
        let inOrder = Array(s.messages.indices)
        let (baseline, counted) = Self.run(s, order: inOrder)
        #expect(counted.deletions >= s.deletions.count, "\(name): the baseline's deletions remove their samples")
        #expect(counted.superseded >= s.versions.count, "\(name)")

        // Each deletion just before its sample's message.
        var early = inOrder
        for (d, m) in s.deletions { early = Self.moving(early, d, before: m) }
        // Each newer version before the older one.
        var reversed = inOrder
        for (o, n) in s.versions { reversed = Self.moving(reversed, n, before: o) }
        // Both, and the deletions moved up to three days before their sample (anywhere: a deletion
        // does not move the clock), seeded.
        let seed = UInt64(truncatingIfNeeded: name.utf8.reduce(5381) { ($0 &* 33) &+ Int($1) })
        var rng = SplitMix64(seed: seed)
        var shuffled = reversed
        for (d, m) in s.deletions {
            // The run of messages before the sample that arrived at most three days before it.
            let day = s.messages[m].day, at = shuffled.firstIndex(of: m)!
            var earliest = at
            while earliest > 0, s.messages[shuffled[earliest - 1]].day >= day - 3 { earliest -= 1 }
            let target = shuffled[Int.random(in: earliest...at, using: &rng)]
            if target != d { shuffled = Self.moving(shuffled, d, before: target) }
        }
        // A gateway's re-send of the sample's message after its deletion (the deletion stays last).
        var resent = inOrder
        for (d, m) in s.deletions.reversed() { resent.insert(m, at: resent.firstIndex(of: d)! + 1) }

        let runs: [(String, [Int], Int?)] = [
            ("deletions first", early, nil), ("versions reversed", reversed, nil), ("both, shuffled (seed \(seed))", shuffled, nil),
            ("both, shuffled, restart midway", shuffled, shuffled.count / 2), ("re-sent after the deletion", resent, nil)
        ]
        for (label, order, restart) in runs {
            let (r, c) = Self.run(s, order: order, restartAt: restart)
            let sameAlerts = r.alerts == baseline.alerts, sameSeries = r.series == baseline.series
            #expect(sameAlerts, "\(name), \(label): \(r.alerts.count) alert transitions, the baseline \(baseline.alerts.count)")
            let differ = r.series.filter { baseline.series[$0.key] != $0.value }.sorted { $0.key < $1.key }.prefix(3).map {
                "\($0.key): \($0.value) vs \(baseline.series[$0.key] ?? "none")"
            }
            #expect(sameSeries, "\(name), \(label): \(differ)")
            if label.hasPrefix("deletions") || (label.hasPrefix("both") && restart == nil) {
                #expect(c.deletedBeforeArrival == s.deletions.count, "\(name), \(label)")
            }
            if label.hasPrefix("versions") { #expect(c.stale == s.versions.count, "\(name), \(label)") }
        }
    }
}
