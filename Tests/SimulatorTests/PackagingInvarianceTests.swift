import Foundation
import MobilityModel
import MobilityWire
import RuleEngine
import Simulator
import TestSupport
import Testing

/// Alerts are a function of the samples, not of how a phone packed them: the same samples of each
/// user, in the same order, one a message, in random batches of up to 300 (multi-day syncs),
/// with messages re-sent, give the same alert transitions. An injury entered up to the revision
/// window late gives, once the alerts it explains are withdrawn, the alerts of the on-time injury.
/// Property tests over the shipped scenarios and population cohorts (with and without profiles,
/// syncs every 1–3 days); each case prints its seed.
@Suite struct PackagingInvarianceTests {
    /// The alert transitions of the traffic (event clock, the end of the input closing each
    /// user's days), as sorted JSON lines; `withdrawn`: also the episodes withdrawn on revision.
    static func alerts(_ records: [TrafficRecord], dropWithdrawn: Bool = false) -> (alerts: [String], withdrawn: Int, rejected: Int) {
        var ing = Ingestor(engine: Engine(program: ShardedReplayTests.program, configuration: ShardedReplayTests.configuration), clock: .event)
        var out: [EngineOutput] = []
        for r in records { ing.handle(topic: r.topic, payload: r.payload, now: Timestamp(milliseconds: 0), into: &out) }
        ing.closeOpenDays(into: &out)
        var transitions: [AlertTransition] = [], rejected = 0
        for o in out {
            switch o {
            case .alert(let t): transitions.append(t)
            case .rejected: rejected += 1
            case .series: break
            }
        }
        let revised = Set(transitions.filter { $0.reason == "revised" }.map(\.id))
        let kept = dropWithdrawn ? transitions.filter { !revised.contains($0.id) } : transitions
        return (kept.map(\.json).sorted(), transitions.count - kept.count, rejected)
    }

    /// The items of a samples payload (a JSON array or one object), as raw bytes.
    static func items(_ payload: [UInt8]) -> [ArraySlice<UInt8>] {
        let array = payload.first == 0x5B
        var bounds: [(Int, Int)] = []
        payload.withUnsafeBufferPointer { p in
            var depth = 0, start = -1, inString = false, escaped = false
            for i in 0..<p.count {
                let b = p[i]
                if inString {
                    if escaped { escaped = false } else if b == 0x5C { escaped = true } else if b == 0x22 { inString = false }
                    continue
                }
                switch b {
                case 0x22: inString = true
                case 0x7B, 0x5B:
                    if b == 0x7B && depth == (array ? 1 : 0) { start = i }
                    depth += 1
                case 0x7D, 0x5D:
                    depth -= 1
                    if b == 0x7D && depth == (array ? 1 : 0) { bounds.append((start, i)) }
                default: break
                }
            }
        }
        return bounds.map { payload[$0.0...$0.1] }
    }

    /// The same traffic with each user's samples, in order, in messages of random sizes (1 to
    /// 300); every other record stays where it was, after the samples that preceded it.
    static func repack(_ records: [TrafficRecord], _ rng: inout SplitMix64) -> [TrafficRecord] {
        let sizes = [1, 1, 2, 5, 10, 25, 50, 100, 300]
        var out: [TrafficRecord] = [], pending: [String: (items: [ArraySlice<UInt8>], size: Int)] = [:]
        func flush(_ topic: String) {
            guard let p = pending[topic], !p.items.isEmpty else { return }
            out.append(TrafficRecord(topic: topic, payload: [0x5B] + Array(p.items.joined(separator: [0x2C])) + [0x5D]))
            pending[topic] = nil
        }
        for r in records {
            guard r.topic.hasSuffix("/samples") else {
                flush(String(r.topic[..<r.topic.lastIndex(of: "/")!]) + "/samples")
                out.append(r)
                continue
            }
            for item in items(r.payload) {
                if pending[r.topic] == nil { pending[r.topic] = ([], sizes[Int(rng.next() % UInt64(sizes.count))]) }
                pending[r.topic]!.items.append(item)
                if pending[r.topic]!.items.count >= pending[r.topic]!.size { flush(r.topic) }
            }
        }
        for topic in pending.keys.sorted() { flush(topic) }
        return out
    }

    /// The same traffic with about one samples message in twelve re-sent (at once, or after a few
    /// of the user's later messages, as a gateway does after a lost connection), and every
    /// user's last samples message re-sent at the end.
    static func resend(_ records: [TrafficRecord], _ rng: inout SplitMix64) -> [TrafficRecord] {
        var out: [TrafficRecord] = [], later: [(due: Int, record: TrafficRecord)] = [], last: [String: TrafficRecord] = [:]
        for (k, r) in records.enumerated() {
            out.append(r)
            for l in later where l.due == k { out.append(l.record) }
            later.removeAll { $0.due == k }
            guard r.topic.hasSuffix("/samples") else { continue }
            last[r.topic] = r
            if rng.next() % 12 == 0 {
                let delay = Int(rng.next() % 4)
                if delay == 0 { out.append(r) } else { later.append((k + delay * 7, r)) }
            }
        }
        out += later.map(\.record)
        out += last.keys.sorted().map { last[$0]! }
        return out
    }

    /// The same traffic with each user's clinical events moved after the first samples message
    /// reaching `delay(user)` days past their date (a clinician entering them late).
    static func delayInjuries(_ records: [TrafficRecord], _ delay: (String) -> Int) -> [TrafficRecord] {
        let layout = TopicLayout()
        var out: [TrafficRecord] = [], held: [String: [(due: String, record: TrafficRecord)]] = [:]
        for r in records {
            guard case .inbound(let user, let kind) = layout.parse(r.topic) else { out.append(r); continue }
            if kind == .events, case .success(let v) = JSONValue.parse(r.payload), case .string(let date)? = v["date"],
                case .string("injury")? = v["kind"], let d = CivilDate(parsing: Substring(date))
            {
                held[user, default: []].append((CivilDate(dayNumber: d.dayNumber + DayNumber(delay(user))).description, r))
                continue
            }
            out.append(r)
            guard kind == .samples, let due = held[user], !due.isEmpty else { continue }
            let reached =
                items(r.payload).compactMap { item -> String? in
                    guard case .success(let v) = JSONValue.parse(Array(item)), case .string(let end)? = v["end"] else { return nil }
                    return String(end.prefix(10))
                }.max() ?? ""
            out += due.filter { $0.due <= reached }.map(\.record)
            held[user] = due.filter { $0.due > reached }
        }
        for user in held.keys.sorted() { out += held[user]!.map(\.record) }
        return out
    }

    /// The first few transitions only one side has, for a failure's message.
    static func difference(_ a: [String], _ b: [String]) -> [String] { Array(Set(a).symmetricDifference(b).sorted().prefix(4)) }

    static func cohort(seed: UInt64, syncDays: Int?, profiles: Bool) -> [TrafficRecord] {
        var pop = Population(users: 10, days: 70, seed: seed)
        pop.syncDays = syncDays
        pop.samplesPerMessage = syncDays == nil ? nil : 50
        let records = Array(pop.traffic())
        return profiles ? records : records.filter { !$0.topic.hasSuffix("/profile") }
    }

    static func scenarios() throws -> [TrafficRecord] {
        let dir = RepoPaths.root + "/simulator/scenarios"
        var out: [TrafficRecord] = []
        for f in try FileManager.default.contentsOfDirectory(atPath: dir).filter({ $0.hasSuffix(".scenario") }).sorted() {
            out += try Scenario.load(dir + "/" + f).generator.generate().map(\.record)
        }
        return out
    }

    @Test(arguments: [(1, nil, true), (2, 1, true), (3, 2, false), (4, 3, true), (5, nil, false)] as [(UInt64, Int?, Bool)])
    func randomPackingsAndReSendsOfACohortGiveTheSameAlerts(seed: UInt64, syncDays: Int?, profiles: Bool) {
        let base = Self.cohort(seed: seed, syncDays: syncDays, profiles: profiles)
        let expected = Self.alerts(base)
        #expect(expected.alerts.count > 5 && expected.rejected == 0, "seed \(seed): \(expected.alerts.count) alerts, \(expected.rejected) rejected")
        var rng = SplitMix64(seed: seed)
        let packed = Self.alerts(Self.repack(base, &rng))
        #expect(packed.alerts == expected.alerts, "seed \(seed): repacked differs: \(Self.difference(packed.alerts, expected.alerts))")
        #expect(packed.rejected == 0)
        let resent = Self.alerts(Self.resend(Self.repack(base, &rng), &rng))
        #expect(resent.alerts == expected.alerts, "seed \(seed): re-sent differs: \(Self.difference(resent.alerts, expected.alerts))")
    }

    @Test func randomPackingsOfTheShippedScenariosGiveTheSameAlerts() throws {
        let base = try Self.scenarios()
        let expected = Self.alerts(base)
        #expect(expected.alerts.count > 10)
        var rng = SplitMix64(seed: 42)
        for round in 0..<2 {
            let packed = Self.alerts(Self.resend(Self.repack(base, &rng), &rng))
            #expect(packed.alerts == expected.alerts, "seed 42 round \(round): \(Self.difference(packed.alerts, expected.alerts))")
        }
    }

    @Test(arguments: [(11, 1), (12, 2), (13, 3)] as [(UInt64, Int)])
    func injuriesEnteredUpToTwoWeeksLateEndAsOnTime(seed: UInt64, syncDays: Int) {
        let base = Self.cohort(seed: seed, syncDays: syncDays, profiles: true)
        let expected = Self.alerts(base)
        var withdrawn = 0
        var rng = SplitMix64(seed: seed)
        let delays = (0..<16).map { _ in 1 + Int(rng.next() % 14) }
        let late = Self.alerts(Self.delayInjuries(base) { user in delays[(Int(user.dropFirst()) ?? 0) % delays.count] }, dropWithdrawn: true)
        withdrawn += late.withdrawn
        #expect(late.rejected == 0, "seed \(seed)")
        // The late injuries mattered: alerts they explain fired before they came, and were withdrawn.
        #expect(withdrawn > 0, "seed \(seed)")
        #expect(late.alerts == expected.alerts, "seed \(seed): \(Self.difference(late.alerts, expected.alerts))")
    }
}
