import EngineTestSupport
import MobilityModel
import RuleLanguage
import TestSupport
import Testing

@testable import RuleEngine

@Suite struct EngineTests {
    static let rules = engineTestRules

    @Test func daysCloseInUserIdOrderWhateverOrderUsersArrived() {
        // advance(to:) keeps a sorted order and merges users added since the last call into it.
        var engine = Engine(program: program(Self.rules))
        var out: [EngineOutput] = []
        for u in ["c", "a", "b"] { engine.ingest(sample("\(u)1", 1.2, day: 1), user: u, now: close(1), into: &out) }
        engine.advance(to: close(1), into: &out)
        for u in ["bb", "0", "d"] { engine.ingest(sample("\(u)2", 1.2, day: 2), user: u, now: close(2), into: &out) }
        out.removeAll()
        engine.advance(to: close(3), into: &out)
        let users = out.series.filter { $0.name == "n" && $0.day == CivilDate(dayNumber: day0 + 3) }.map(\.user)
        #expect(users == ["0", "a", "b", "bb", "c", "d"])
    }

    @Test func reDeliveriesAreDuplicatesAcrossFilterRebuildsAndRestore() {
        // 600 samples over 6 open days: the user's id filter is resized several times on the way.
        var engine = Engine(program: program(Self.rules))
        var out: [EngineOutput] = []
        let samples = (0..<600).map { i in sample("id-\(i)", 1.0 + Double(i % 7) / 10, day: 1 + i / 100, hour: i % 20) }
        for s in samples { #expect(engine.ingest(s, user: "u", now: close(6), into: &out) == .accepted) }
        for s in samples { #expect(engine.ingest(s, user: "u", now: close(6), into: &out) == .duplicate) }
        // A restored state (its filter rebuilt from the stored values) recognises them too, and
        // still accepts new ids.
        var restored = Engine(program: program(Self.rules))
        restored.restore(engine.snapshot(of: "u")!)
        for s in samples.shuffled() { #expect(restored.ingest(s, user: "u", now: close(6), into: &out) == .duplicate) }
        for i in 0..<200 { #expect(restored.ingest(sample("new-\(i)", 1.1, day: 6), user: "u", now: close(6), into: &out) == .accepted) }
        #expect(restored.state(of: "u")!.openValueCount == 800)
    }

    @Test(arguments: [21, 22, 23] as [UInt64])
    func openDaysStayGroupedUnderLateDataAndDeletions(seed: UInt64) {
        // All open days share one values array: a late sample for an earlier day is inserted
        // inside it, a deletion closes the gap. Random arrivals over 7 open days, deletions and
        // day closes in between; then the grouping, and every day's series (cached inputs
        // invalidated on change), must match a fresh engine fed only the surviving samples.
        var rng = SplitMix64(seed: seed)
        var engine = Engine(program: program(Self.rules))
        var out: [EngineOutput] = []
        var live: [(id: String, day: Int)] = [], all: [String: Sample] = [:]
        for k in 0..<400 {
            if !live.isEmpty, Int.random(in: 0..<5, using: &rng) == 0 {
                let gone = live.remove(at: Int.random(in: 0..<live.count, using: &rng))
                #expect(engine.delete(ids: [gone.id], user: "u") == 1)
            } else {
                let d = Int.random(in: 4...10, using: &rng), id = "s\(k)"
                let s = sample(id, 0.8 + Double(Int.random(in: 0..<20, using: &rng)) / 20, day: d, hour: Int.random(in: 2..<24, using: &rng))
                #expect(engine.ingest(s, user: "u", now: close(10), into: &out) == .accepted)
                live.append((id, d))
                all[id] = s
            }
            if k % 37 == 0 { engine.advance(to: close(10), into: &out) }
        }
        engine.advance(to: close(10), into: &out)
        let st = engine.state(of: "u")!
        var expected: [Int: [SampleID]] = [:]
        for (id, d) in live { expected[d, default: []].append(SampleID(id)) }
        for (i, day) in st.openDays.enumerated() {
            #expect(st.values(ofOpenDay: i).map(\.id) == expected[Int(day.day - day0)] ?? [], "day \(day.day - day0)")
            #expect(i == 0 ? day.start == 0 : day.start == st.openDays[i - 1].range.upperBound)
        }
        #expect(st.openValueCount == live.count)
        var fresh = Engine(program: program(Self.rules))
        var freshOut: [EngineOutput] = []
        for (id, _) in live.sorted(by: { $0.id < $1.id }) { fresh.ingest(all[id]!, user: "u", now: close(10), into: &freshOut) }
        fresh.advance(to: close(10), into: &freshOut)
        for name in ["n", "speed", "weekly"] {
            let got = out.series(name), want = freshOut.series(name)
            #expect(!want.isEmpty)
            for (d, v) in want { #expect(got[d] == v, "\(name) day \(d) (seed \(seed))") }
        }
    }

    @Test func isKnownOfBooleanLetsAndComparisons() {
        // A boolean let, and an equality of numbers, are known when their operands are.
        let p = program(
            """
            series speed = p95(walkingSpeed, source: device)
            series ds = median(walkingDoubleSupportPercentage)
            alert known {
              let fast = speed > 1.0 m/s
              when is_known(fast) and is_known(speed == 1.2 m/s) and not is_known(ds == 30 %)
            }
            alert unknown {
              let fast = speed > 1.0 m/s
              when not is_known(fast)
            }
            """)
        var engine = Engine(program: p)
        var out: [EngineOutput] = []
        engine.ingest(sample("a", 1.3, day: 1), user: "u", now: close(1), into: &out)
        engine.advance(to: close(2), into: &out)  // day 1 has data, day 2 has none
        let fired = out.alerts.filter { $0.status == .firing }.map { "\($0.rule) \($0.day.dayNumber - day0)" }
        #expect(fired == ["known 1", "unknown 2"])
    }

    @Test func lateSampleWithinLatenessRevisesSeriesButBeyondIsRejected() {
        var engine = Engine(program: program(Self.rules))
        var out: [EngineOutput] = []
        engine.ingest(sample("a", 1.2, day: 1), user: "u", now: close(1), into: &out)
        engine.advance(to: close(3), into: &out)
        #expect(out.series("n")[1]! == 1)
        out.removeAll()
        // day 1 is closed; a late sample within the allowed lateness re-opens it
        #expect(engine.ingest(sample("b", 1.4, day: 1, hour: 13), user: "u", now: close(3), into: &out) == .accepted)
        engine.advance(to: close(3), into: &out)
        let revised = out.series.filter { $0.name == "n" && $0.revised }
        #expect(revised.first { $0.day.dayNumber == day0 + 1 }?.value == 2)
        // beyond the allowed lateness (7 days): rejected and counted, state unchanged
        guard case .rejected(let r) = engine.ingest(sample("c", 1.4, day: 1), user: "u", now: close(20), into: &out) else {
            Issue.record("late sample accepted"); return
        }
        #expect(r.reason == .tooLate)
        guard case .rejected(let f) = engine.ingest(sample("d", 1.4, day: 30), user: "u", now: close(20), into: &out) else {
            Issue.record("future sample accepted"); return
        }
        #expect(f.reason == .inFuture)
        #expect(engine.state(of: "u")!.openValueCount == 2)
    }

    @Test func duplicatesDeletionsAndSyncVersions() {
        var engine = Engine(program: program(Self.rules))
        var out: [EngineOutput] = []
        let s = sample("a", 1.2, day: 1)
        #expect(engine.ingest(s, user: "u", now: close(1), into: &out) == .accepted)
        #expect(engine.ingest(s, user: "u", now: close(1), into: &out) == .duplicate)
        let v1 = sample("v1", 1.0, day: 1, metadata: [MetadataKey.syncIdentifier: .string("K"), MetadataKey.syncVersion: .number(1)])
        let v2 = sample("v2", 1.5, day: 1, metadata: [MetadataKey.syncIdentifier: .string("K"), MetadataKey.syncVersion: .number(2)])
        let v0 = sample("v0", 0.5, day: 1, metadata: [MetadataKey.syncIdentifier: .string("K"), MetadataKey.syncVersion: .number(0)])
        #expect(engine.ingest(v1, user: "u", now: close(1), into: &out) == .accepted)
        #expect(engine.ingest(v2, user: "u", now: close(1), into: &out) == .superseded)
        #expect(engine.ingest(v0, user: "u", now: close(1), into: &out) == .stale)
        #expect(engine.delete(ids: ["a", "nope"], user: "u") == 1)
        engine.advance(to: close(1), into: &out)
        #expect(out.series("n")[1]! == 1)  // only v2 is left
        #expect(out.series("speed")[1]! == 1.5)
    }

    @Test func inhibitionAndUnknownSemantics() {
        var engine = Engine(program: program(Self.rules))
        var out: [EngineOutput] = []
        // slow for days 1-10, then nothing for 5 days
        for d in 1...10 { engine.ingest(sample("s\(d)", 0.8, day: d), user: "u", now: close(d), into: &out) }
        engine.advance(to: close(15), into: &out)
        let a = out.alerts.map { "\($0.rule) \($0.status.rawValue) \($0.day.dayNumber - day0)" }
        // weekly known from day 4, for 2 d: fires day 5. The gap fires on day 13; slow is held, not resolved.
        #expect(a == ["slow firing 5", "gap firing 13"])
        let fired = out.alerts[0]
        #expect(fired.details == "weekly 0.80 m/s" && fired.headline == "Slow since 2026-01-05")
        #expect(fired.evidence == [Evidence(name: "recent", value: 0.8, unit: "m/s")])
        #expect(fired.id == AlertTransition.stableID(rule: "slow", user: "u", activeSince: utc.startOfDay(day0 + 4)))
    }

    @Test func sampleRulesFireAtOnceAndFilter() {
        var engine = Engine(program: program(Self.rules))
        var out: [EngineOutput] = []
        engine.ingest(sample("w1", .sixMinuteWalkTestDistance, 500, day: 1), user: "u", now: close(1), into: &out)
        engine.ingest(sample("c1", .sixMinuteWalkTestDistance, 300, day: 2, provenance: .userEntered), user: "u", now: close(2), into: &out)
        engine.ingest(sample("w2", .sixMinuteWalkTestDistance, 420, day: 8), user: "u", now: close(8), into: &out)
        #expect(out.alerts.map { "\($0.status.rawValue) \($0.day.dayNumber - day0)" } == ["firing 1", "resolved 8"])
        #expect(out.alerts[0].evidence.first?.value == 500)
    }

    @Test func sampleRulesRunOnlyForTheirMetric() {
        // Per-sample rules are indexed by the metric they trigger on: each fires for its own
        // metric's samples and is not evaluated for another's (which would resolve or fire it).
        let rules = """
            alert fast {
              on sample walkingSpeed
              when value > 1.5 m/s
            }
            alert far {
              on sample sixMinuteWalkTestDistance
              when value >= 500 m
            }
            """
        var engine = Engine(program: program(rules))
        var out: [EngineOutput] = []
        engine.ingest(sample("s1", .walkingSpeed, 1.6, day: 1), user: "u", now: close(1), into: &out)
        engine.ingest(sample("d1", .sixMinuteWalkTestDistance, 510, day: 1, hour: 13), user: "u", now: close(1), into: &out)
        // A distance of 1 m would resolve `fast` if it ran there; a speed of 1 m/s would resolve `far`.
        engine.ingest(sample("d2", .sixMinuteWalkTestDistance, 1, day: 2), user: "u", now: close(2), into: &out)
        engine.ingest(sample("s2", .walkingSpeed, 1.0, day: 3), user: "u", now: close(3), into: &out)
        #expect(
            out.alerts.map { "\($0.rule) \($0.status.rawValue) \($0.day.dayNumber - day0)" } == [
                "fast firing 1", "far firing 1", "far resolved 2", "fast resolved 3"
            ])
    }

    @Test func dstDayHas23HoursOfSamples() throws {
        let la = try #require(LocalCalendar(identifier: "America/Los_Angeles"))
        var config = EngineConfiguration()
        config.defaultCalendar = la
        var engine = Engine(program: program(Self.rules), configuration: config)
        var out: [EngineOutput] = []
        let spring = CivilDate(year: 2026, month: 3, day: 8).dayNumber
        // one sample every local hour over the 23-hour day (written in UTC: the home zone decides the day)
        var t = la.startOfDay(spring)
        var i = 0
        while t < la.startOfDay(spring + 1) {
            engine.ingest(Sample(id: "h\(i)", metric: .walkingSpeed, value: 1, start: t, end: t), user: "u", now: t, into: &out)
            t = t.adding(seconds: 3600)
            i += 1
        }
        #expect(i == 23)
        // the day closes at local midnight + 1 h grace, not before
        engine.advance(to: la.startOfDay(spring + 1).adding(seconds: 3599), into: &out)
        #expect(out.series.isEmpty)
        engine.advance(to: la.startOfDay(spring + 1).adding(seconds: 3600), into: &out)
        #expect(out.series.first { $0.name == "n" }?.value == 23)
        #expect(out.series.first { $0.name == "n" }?.day.description == "2026-03-08")
    }

    @Test func reloadKeepsStateOfRulesThatKeptTheirName() {
        var engine = Engine(program: program(Self.rules))
        var out: [EngineOutput] = []
        for d in 1...6 { engine.ingest(sample("s\(d)", 0.8, day: d), user: "u", now: close(d), into: &out) }
        engine.advance(to: close(6), into: &out)
        #expect(out.alerts.map(\.rule) == ["slow"])
        engine.reload(
            program(
                Self.rules.replacingOccurrences(of: "alert gap", with: "alert gap2").replacingOccurrences(of: "inhibited_by gap", with: "inhibited_by gap2")),
            now: close(30), into: &out)
        #expect(engine.state(of: "u")!.alerts["slow"]?.isFiring == true)
        #expect(engine.state(of: "u")!.alerts["gap"] == nil)
        out.removeAll()
        engine.ingest(sample("s7", 0.8, day: 7), user: "u", now: close(7), into: &out)
        engine.advance(to: close(7), into: &out)
        #expect(out.alerts.isEmpty)  // still firing: no second firing transition
    }
}

/// Removing a rule resolves its firing instances; the firing counts follow the alert states.
@Suite struct ReloadAndFiringCountTests {
    @Test func removingAFiringRuleExpiresItWithAReason() throws {
        var engine = Engine(program: program(EngineTests.rules))
        var out: [EngineOutput] = []
        for u in ["u", "v"] {
            for d in 1...6 { engine.ingest(sample("\(u)\(d)", 0.8, day: d), user: u, now: close(d), into: &out) }
        }
        engine.advance(to: close(6), into: &out)
        let fired = try #require(out.alerts.first { $0.rule == "slow" && $0.user == "u" })
        let slow = try #require(engine.alertNames.firstIndex(of: "slow"))
        #expect(engine.firingCounts[slow] == 2)
        #expect(engine.firingCounts == engine.countFiring())
        out.removeAll()
        let without = EngineTests.rules.replacingOccurrences(of: "inhibited_by gap", with: "")
            .replacingOccurrences(of: "alert slow", with: "alert slower")
        engine.reload(program(without), now: close(7), into: &out)
        #expect(out.alerts.count == 2)
        // Expired, not resolved: nothing showed that its condition stopped holding.
        let resolved = try #require(out.alerts.first { $0.user == "u" })
        #expect(resolved.rule == "slow" && resolved.status == .expired && resolved.reason == "rule_removed")
        #expect(resolved.id == fired.id && resolved.expiredAt == close(7) && resolved.resolvedAt == nil)
        #expect(resolved.json.contains("\"status\":\"expired\"") && resolved.json.contains("\"reason\":\"rule_removed\""))
        #expect(engine.firingCounts == engine.countFiring())
        #expect(engine.firingCounts.allSatisfy { $0 == 0 })
        // A restored firing state is counted; replacing a user's state does not count it twice.
        var restarted = Engine(program: program(EngineTests.rules))
        var old = Engine(program: program(EngineTests.rules))
        for d in 1...6 { old.ingest(sample("w\(d)", 0.8, day: d), user: "w", now: close(d), into: &out) }
        old.advance(to: close(6), into: &out)
        restarted.restore(old.snapshot(of: "w")!)
        restarted.restore(old.snapshot(of: "w")!)
        #expect(restarted.firingCounts[slow] == 1)
        #expect(restarted.firingCounts == restarted.countFiring())
    }
}
