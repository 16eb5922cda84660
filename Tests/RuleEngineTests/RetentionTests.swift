import EngineTestSupport
import MobilityModel
import RuleLanguage
import TestSupport
import Testing

@testable import RuleEngine

/// Retention: folded days no rule can reach (outside the look-back before the earliest day a late
/// sample or a revision re-evaluates, and
/// outside the anchored windows around the latest clinical event of each kind) are dropped.
@Suite struct RetentionTests {
    /// One sample a day for `days` days, each day closed as it ends.
    static func run(_ rules: String, days: Int, injuryOn: Int? = nil) -> (Engine, UserState) {
        var e = Engine(program: program(rules))
        var out: [EngineOutput] = []
        if let injuryOn {
            e.record(
                event: TimelineEvent(
                    id: "i", category: .clinical, kind: "injury", firstDay: day0 + DayNumber(injuryOn),
                    lastDay: day0 + DayNumber(injuryOn)), user: "u")
        }
        for d in 0..<days {
            e.ingest(sample("s\(d)", 1.0, day: d), user: "u", now: close(d), into: &out)
            e.advance(to: close(d), into: &out)
        }
        return (e, e.state(of: "u")!)
    }

    @Test func foldedDaysBeforeTheLookBackAndTheLatenessAreDropped() {
        let (e, st) = RetentionTests.run("series s = mean(walkingSpeed)\nseries w = mean(s, 7 d)", days: 60)
        let closed = st.lastClosedDay!
        // The look-back before the earliest day a revision re-evaluates (14 d, more than the
        // 7 d lateness plus 2 d of margin).
        let recent = closed - DayNumber(e.program.lookbackDays) - DayNumber(max(7 + 2, e.configuration.revisionDays))
        #expect(e.retainedRanges(st) == [recent...DayNumber.max])
        #expect(st.foldedDayList.first?.day == recent && !st.foldedDayList.isEmpty)
        #expect(st.lastFoldedDay! < st.openDays.first!.day)
    }

    @Test func theAnchoredWindowAroundTheLatestInjuryIsKept() throws {
        let rules = """
            series s = mean(walkingSpeed)
            alert below {
              let baseline = mean(s, 10 d, before: injury, min: 1)
              when s < baseline
            }
            """
        let (e, st) = RetentionTests.run(rules, days: 90, injuryOn: 20)
        let a = DayNumber(e.program.anchoredWindowDays), injury = day0 + 20
        #expect(a > 0)
        let ranges = e.retainedRanges(st)
        #expect(ranges.count == 2 && ranges[1] == (injury - a - 1)...(injury + a))
        let kept = Set(st.foldedDayList.map(\.day))
        // Every day of data inside a retained range is kept; every other folded day went.
        for d in (day0 + 0)...(st.lastFoldedDay!) {
            #expect(kept.contains(d) == ranges.contains { $0.contains(d) }, "day \(d - day0)")
        }
        #expect(!kept.contains(injury + a + 1) && kept.contains(injury))
    }

    @Test func withRetentionOffNothingIsFoldedOrDropped() {
        var config = EngineConfiguration()
        config.retention = false
        var e = Engine(program: program("series s = mean(walkingSpeed)"), configuration: config)
        var out: [EngineOutput] = []
        for d in 0..<30 {
            e.ingest(sample("s\(d)", 1.0, day: d), user: "u", now: close(d), into: &out)
            e.advance(to: close(d), into: &out)
        }
        let st = e.state(of: "u")!
        #expect(st.foldedRuns.isEmpty && st.openDays.count == 30)
    }
}
