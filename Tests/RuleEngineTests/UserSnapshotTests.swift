import EngineTestSupport
import MobilityModel
import RuleLanguage
import TestSupport
import Testing

@testable import RuleEngine

/// The store seam: ``Engine/changes(of:)`` holds exactly what changed since the last commit,
/// and restoring a snapshot gives back the state it was taken of.
@Suite struct UserSnapshotTests {
    static let rules = """
        series s = p95(walkingSpeed)
        series n = count(walkingSpeed, source: device)
        alert slow { when mean(s, 3 d) < 1 m/s
          for 1 d }
        """

    /// A user with every kind of content: profile, events, sync ids, folded history with a gap,
    /// open days, a firing alert, a revised day.
    static func populated() -> Engine {
        var e = Engine(program: program(rules))
        var out: [EngineOutput] = []
        let tz = LocalCalendar(identifier: "Europe/Zurich")!
        e.setProfile(user: "u", calendar: tz)
        e.record(event: TimelineEvent(id: "i", category: .clinical, kind: "injury", firstDay: day0, lastDay: day0), user: "u")
        e.record(event: TimelineEvent(id: "h", category: .annotation, kind: "heat_wave", firstDay: day0 + 1, lastDay: day0 + 3, note: "hot"), user: "u")
        for d in 0..<20 where d != 4 {
            let t = tz.startOfDay(day0 + DayNumber(d)).adding(seconds: 36_000)
            for j in 0..<3 {
                e.ingest(
                    Sample(
                        id: "s\(d)-\(j)", metric: .walkingSpeed, value: 0.7 + Double(j) * 0.05, start: t, end: t,
                        provenance: j == 1 ? .userEntered : .device,
                        metadata: j == 0 ? [MetadataKey.syncIdentifier: .string("k\(d)"), MetadataKey.syncVersion: .number(1)] : [:]),
                    user: "u", now: t, into: &out)
            }
            e.advance(to: t, into: &out)
        }
        let late = tz.startOfDay(day0 + 17).adding(seconds: 40_000)
        e.ingest(
            Sample(id: "late", metric: .walkingSpeed, value: 1.4, start: late, end: late), user: "u",
            now: tz.startOfDay(day0 + 19).adding(seconds: 40_000), into: &out)
        return e
    }

    @Test func restoringASnapshotGivesBackTheState() throws {
        let e = UserSnapshotTests.populated()
        let st = try #require(e.state(of: "u"))
        #expect(!st.foldedRuns.isEmpty && st.openDays.count > 1 && st.alerts["slow"]?.isFiring == true && !st.revisedDays.isEmpty)
        #expect(st.syncIndex.count > 3 && st.events.count == 2)
        let snapshot = try #require(e.snapshot(of: "u"))
        var r = Engine(program: e.program)
        r.restore(snapshot)
        let back = try #require(r.state(of: "u"))
        #expect(back.calendar.identifier == "Europe/Zurich" && back.hasProfile)
        #expect(back.firstDay == st.firstDay && back.lastClosedDay == st.lastClosedDay)
        #expect(back.foldedDayList == st.foldedDayList && back.foldedRuns == st.foldedRuns && back.foldedColumns == st.foldedColumns)
        #expect(back.foldedInputs == st.foldedInputs && back.openDayValues == st.openDayValues && back.openDays.map(\.day) == st.openDays.map(\.day))
        #expect(back.syncIndex == st.syncIndex && back.events == st.events && back.boundaries == st.boundaries)
        #expect(back.alertStates == st.alertStates && back.revisedDays == st.revisedDays)
        #expect(r.firingCounts == e.firingCounts)
        // The same snapshot again, and the same future.
        #expect(r.snapshot(of: "u") == snapshot)
        var a = e, outA: [EngineOutput] = [], outB: [EngineOutput] = []
        let later = Timestamp(seconds: Int64(day0 + 30) * 86_400)
        a.advance(to: later, into: &outA)
        r.advance(to: later, into: &outB)
        #expect(outA == outB && !outA.isEmpty)
    }

    @Test func changesHoldExactlyWhatChangedSinceTheLastCommit() throws {
        var e = UserSnapshotTests.populated()
        var out: [EngineOutput] = []
        let first = try #require(e.changes(of: "u"))
        // Never committed: every open day, from its first value, nothing stored.
        #expect(first.openDays.map(\.day) == e.state(of: "u")!.openDays.map(\.day))
        #expect(first.openDays.allSatisfy { $0.changedFrom == 0 && $0.storedCount == 0 })
        #expect(first.foldedBefore == e.state(of: "u")!.openDays.first!.day)  // days folded on the way
        e.markPersisted("u")
        let clean = try #require(e.changes(of: "u"))
        #expect(clean.openDays.isEmpty && clean.foldedBefore == nil)
        // The head is whole in every commit.
        #expect(clean.foldedDays == first.foldedDays && clean.alerts == first.alerts && clean.syncIndex == first.syncIndex)

        // One new value on the last day: that day alone, from its old count, with what the store holds.
        let st = try #require(e.state(of: "u"))
        let last = try #require(st.openDays.last)
        let t = st.calendar.startOfDay(last.day).adding(seconds: 50_000)
        e.ingest(Sample(id: "new", metric: .walkingSpeed, value: 1.2, start: t, end: t), user: "u", now: t, into: &out)
        let one = try #require(e.changes(of: "u"))
        #expect(
            one.openDays == [
                UserSnapshot.OpenDay(
                    day: last.day, start: Int(last.start), count: Int(last.count) + 1,
                    changedFrom: Int(last.count), storedCount: Int(last.count))
            ])
        #expect(one.values(of: one.openDays[0]).last?.id == SampleID("new") && one.foldedBefore == nil)

        // A deletion on an earlier day: that day from the deleted value on, with one value less.
        e.markPersisted("u")
        let earlier = e.state(of: "u")!.openDays[0]
        let victim = e.state(of: "u")!.openDayValues[0][1].id
        let id = try #require((0..<20).flatMap { d in (0..<3).map { "s\(d)-\($0)" } }.first { SampleID($0) == victim })
        #expect(e.delete(ids: [id], user: "u") == 1)
        let deleted = try #require(e.changes(of: "u"))
        #expect(deleted.openDays.map(\.day) == [earlier.day])
        #expect(
            deleted.openDays[0].changedFrom == 1 && deleted.openDays[0].count == Int(earlier.count) - 1
                && deleted.openDays[0].storedCount == Int(earlier.count))

        // Days closing past the allowed lateness: foldedBefore says from where the rows go.
        e.markPersisted("u")
        e.advance(to: Timestamp(seconds: Int64(day0 + 24) * 86_400), into: &out)
        let folded = try #require(e.changes(of: "u"))
        let open = e.state(of: "u")!.openDays
        #expect(folded.foldedBefore == open.first?.day && folded.foldedBefore! > earlier.day)
        #expect(folded.foldedDays.last!.day > deleted.foldedDays.last!.day)  // the head carries the newly folded days
    }

    @Test func restoreAlignsAlertStatesWithTheRulesByName() throws {
        let firing = AlertStateMachine(state: .firing(activeSince: 1, firedAt: 2, lastTrue: 3, lastSent: 4), quietUntil: 5, lastEvaluated: 6)
        var s = UserSnapshot(user: "u")
        s.alerts = [
            .init(rule: "gone", machine: AlertStateMachine(state: .pending(activeSince: 7), quietUntil: .min, lastEvaluated: 8)),
            .init(rule: "slow", machine: firing)
        ]
        var e = Engine(program: program("series s = mean(walkingSpeed)\nalert fresh { when s > 9 m/s }\nalert slow { when s < 1 m/s }"))
        e.restore(s)
        let st = try #require(e.state(of: "u"))
        #expect(st.alertNames == ["fresh", "slow"] && st.alertStates == [AlertStateMachine(), firing])
        #expect(st.alertNames.withUnsafeBufferPointer { $0.baseAddress } == e.alertNames.withUnsafeBufferPointer { $0.baseAddress })
        #expect(e.firingCounts == [0, 1])
    }

    /// The stored codes of daily inputs are part of the store format: they must never change.
    @Test func foldedInputCodesAreStableAndRoundTrip() {
        let all: [(Aggregation, UInt8)] = [
            (.percentile(95, .linear), 0), (.mean, 1), (.median, 2), (.min, 3), (.max, 4), (.sum, 5),
            (.count, 6), (.last, 7), (.percentile(10, .nearestRank), 0)
        ]
        for (a, code) in all {
            let d = DailyInput(metric: .walkingSpeed, provenance: .device, aggregation: a)
            let f = UserSnapshot.FoldedInput(d)
            #expect(f.reduction.rawValue == code && f.dailyInput == d, "\(a)")
        }
        #expect(
            UserSnapshot.FoldedInput(DailyInput(metric: .walkingStepLength, provenance: nil, aggregation: .percentile(10, .nearestRank))).method.rawValue == 1)
    }
}
