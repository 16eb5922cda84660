import EngineTestSupport
import MobilityModel
import RuleLanguage
import Testing

@testable import Ingest
@testable import RuleEngine

/// Timeline entries with absurd dates, and how many a user may hold.
@Suite struct TimelineBoundsTests {
    static let rules = """
        series n = count(walkingSpeed)
        series weekly = mean(n, 7 d, min: 1)
        alert gap {
          let missing = missing_days(n)
          when missing >= 3 d
        }
        """

    /// A wall-clock ingestor with ten days of data for `u`, days 0–9 closed.
    static func tenDays() -> (Ingestor, [EngineOutput]) {
        var ing = Ingestor(engine: Engine(program: program(rules)), clock: .wall)
        var out: [EngineOutput] = []
        for d in 0..<10 {
            ing.handle(topic: WireTraffic.samplesTopic("u"), payload: WireTraffic.samples("s", day: d, hours: [9, 15]), now: close(d), into: &out)
            ing.tick(now: close(d), into: &out)
        }
        return (ing, out)
    }

    @Test func anInjuryInYearOneIsRefusedAndRepublishesNothing() {
        var (ing, out) = Self.tenDays()
        #expect(out.rejections.isEmpty)
        out.removeAll()
        let payload = WireTraffic.events(["{\"id\":\"inj\",\"kind\":\"injury\",\"date\":\"0001-06-01\"}"])
        ing.handle(topic: WireTraffic.eventsTopic("u"), payload: payload, now: close(9), into: &out)
        ing.tick(now: close(9), into: &out)
        #expect(out.rejectionReasons == ["date_out_of_range"])
        #expect(out.rejections.first?.detail.contains("0001-06-01") == true)
        #expect(out.series.isEmpty, "\(out.series.count) series points republished")
        #expect(ing.engine.state(of: "u")!.events.isEmpty)
        #expect(ing.engine.state(of: "u")!.firstDay == day0)
    }

    @Test func entriesAfterTheUsersTodayAreRefused() {
        var (ing, out) = Self.tenDays()
        out.removeAll()
        let payload = WireTraffic.events([
            "{\"id\":\"s1\",\"kind\":\"surgery\",\"date\":\"2027-06-01\"}",
            "{\"id\":\"a1\",\"kind\":\"heat_wave\",\"start\":\"2026-01-05\",\"end\":\"9999-12-31\"}",
            "{\"id\":\"ok\",\"kind\":\"heat_wave\",\"start\":\"2026-01-05\",\"end\":\"2026-01-08\"}"
        ])
        ing.handle(topic: WireTraffic.eventsTopic("u"), payload: payload, now: close(9), into: &out)
        #expect(out.rejectionReasons == ["date_out_of_range", "date_out_of_range"])
        #expect(out.rejections.map { $0.index } == [0, 1])
        #expect(ing.engine.state(of: "u")!.events.keys.sorted() == ["ok"])
    }

    /// An annotation reported at its start with its planned end (the simulator's heat waves: "from
    /// today for ten days") is accepted; one reaching more than a year ahead is not.
    @Test func anAnnotationMayEndAheadOfTheUsersToday() {
        var (ing, out) = Self.tenDays()
        out.removeAll()
        let payload = WireTraffic.events([
            "{\"id\":\"hw\",\"kind\":\"heat_wave\",\"start\":\"2026-01-09\",\"end\":\"2026-01-19\"}",
            "{\"id\":\"far\",\"kind\":\"heat_wave\",\"start\":\"2026-01-09\",\"end\":\"2027-02-01\"}"
        ])
        ing.handle(topic: WireTraffic.eventsTopic("u"), payload: payload, now: close(9), into: &out)
        #expect(out.rejectionReasons == ["date_out_of_range"])
        #expect(out.rejections.map { $0.index } == [1])
        #expect(ing.engine.state(of: "u")!.events.keys.sorted() == ["hw"])
    }

    @Test func anOldInjuryIsKeptButRevisesOnlyTheDaysStillHeld() {
        var (ing, out) = Self.tenDays()
        out.removeAll()
        let old = CivilDate(dayNumber: day0 - 600)
        ing.handle(
            topic: WireTraffic.eventsTopic("u"), payload: WireTraffic.events(["{\"id\":\"inj\",\"kind\":\"injury\",\"date\":\"\(old)\"}"]),
            now: close(9), into: &out)
        ing.tick(now: close(9), into: &out)
        #expect(out.rejections.isEmpty)
        #expect(ing.engine.state(of: "u")!.events["inj"] != nil)
        // A boundary 600 days back can change no series value of the days held (they start
        // after it), and the days before them are not held: at most the held days are republished.
        let held = ing.engine.program.lookbackDays + 7 + 3
        #expect(out.series.count <= held * ing.engine.program.series.count, "\(out.series.count) series points republished")
        // It does not stretch the user's history back 600 days either.
        #expect(ing.engine.state(of: "u")!.firstDay == day0)
    }

    @Test func timelineEntriesPerUserAreCappedAndReplaceByIdStillWorks() {
        var (ing, out) = Self.tenDays()
        out.removeAll()
        let cap = 500  // EngineConfiguration.maxTimelineEntries, the documented default
        for m in 0..<6 {
            let entries = (0..<1000).map { i in "{\"id\":\"a\(m)-\(i)\",\"kind\":\"pain\",\"date\":\"2026-01-05\",\"note\":\"knee\"}" }
            ing.handle(topic: WireTraffic.eventsTopic("u"), payload: WireTraffic.events(entries), now: close(9), into: &out)
        }
        #expect(ing.engine.state(of: "u")!.events.count == cap)
        #expect(out.rejectionReasons.count == 6000 - cap)
        #expect(Set(out.rejectionReasons) == ["too_many_entries"])
        #expect(ing.counters.rejected.values.reduce(0, +) == 6000 - cap)
        out.removeAll()
        // At the cap, an entry already held can still be replaced by id.
        ing.handle(
            topic: WireTraffic.eventsTopic("u"), payload: WireTraffic.events(["{\"id\":\"a0-7\",\"kind\":\"fatigue\",\"date\":\"2026-01-06\"}"]),
            now: close(9), into: &out)
        #expect(out.rejections.isEmpty)
        #expect(ing.engine.state(of: "u")!.events["a0-7"]?.kind == "fatigue")
        #expect(ing.engine.state(of: "u")!.events.count == cap)
    }
}
