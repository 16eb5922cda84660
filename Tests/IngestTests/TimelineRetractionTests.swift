import EngineTestSupport
import MobilityModel
import MobilityWire
import RuleLanguage
import Testing

@testable import Ingest
@testable import RuleEngine

/// Retracting and correcting timeline entries (`{"id": …, "retracted": true}` on the events topic,
/// an entry re-sent with its id): the series of the held days are republished as if the retracted
/// entry had never been recorded, or the corrected one had always had its new date.
@Suite struct TimelineRetractionTests {
    /// A series whose windows a clinical event cuts (windows never cross one).
    static let rules = """
        series n = count(walkingSpeed)
        series weekly = sum(n, 7 d, min: 1)
        series well = sum(n, 7 d, min: 1, excluding: illness)
        """

    /// Ten days of data for `u`, two samples a day, each day closed by the wall clock; `entries`
    /// are on the timeline before the first day closes.
    static func tenDays(_ entries: [String] = []) -> (Ingestor, [EngineOutput]) {
        var ing = Ingestor(engine: Engine(program: program(rules)), clock: .wall)
        var out: [EngineOutput] = []
        if !entries.isEmpty { ing.handle(topic: WireTraffic.eventsTopic("u"), payload: WireTraffic.events(entries), now: close(9), into: &out) }
        for d in 0..<10 {
            ing.handle(topic: WireTraffic.samplesTopic("u"), payload: WireTraffic.samples("s", day: d, hours: [9, 15]), now: close(d), into: &out)
            ing.tick(now: close(d), into: &out)
        }
        return (ing, out)
    }

    /// Sends `entries` on the events topic at the close of day 9, then lets the engine republish.
    static func send(_ entries: [String], _ ing: inout Ingestor, _ out: inout [EngineOutput]) {
        ing.handle(topic: WireTraffic.eventsTopic("u"), payload: WireTraffic.events(entries), now: close(9), into: &out)
        ing.tick(now: close(9), into: &out)
    }

    /// Each day's latest published value of `weekly`.
    static func latest(_ out: [EngineOutput]) -> [Int: Double?] { out.series("weekly") }

    static func injury(_ day: Int) -> String {
        "{\"id\":\"inj\",\"kind\":\"injury\",\"date\":\"\(CivilDate(dayNumber: day0 + DayNumber(day)))\"}"
    }

    @Test func aRetractedInjuryLeavesTheSeriesAsIfItWasNeverRecorded() {
        let (_, plain) = Self.tenDays()
        var (ing, out) = Self.tenDays()
        Self.send([Self.injury(5)], &ing, &out)
        #expect(Self.latest(out)[6] == 4, "the injury cut the window: \(Self.latest(out))")
        #expect(ing.engine.state(of: "u")!.boundaries == [day0 + 5])
        out.removeAll()
        Self.send(["{\"id\":\"inj\",\"retracted\":true}"], &ing, &out)
        #expect(out.rejections.isEmpty)
        #expect(out.series.allSatisfy(\.revised) && !out.series.isEmpty, "the days from the injury on are republished, revised")
        #expect(out.series("weekly").keys.min() == 5)
        var merged = Self.latest(Self.tenDays().1)
        for (d, v) in Self.latest(out) { merged[d] = v }
        #expect(merged == Self.latest(plain))
        #expect(ing.engine.state(of: "u")!.events.isEmpty)
        #expect(ing.engine.state(of: "u")!.boundaries.isEmpty)
        #expect(ing.counters.events == 2)
    }

    /// An illness retracted: the days it covered count again in `excluding:` windows, and are
    /// republished so.
    @Test func aRetractedAnnotationGivesItsDaysBackToTheWindowsThatLeftThemOut() {
        let plain = Self.tenDays().1.series("well")
        let ill = "{\"id\":\"ill\",\"kind\":\"illness\",\"start\":\"\(CivilDate(dayNumber: day0 + 4))\",\"end\":\"\(CivilDate(dayNumber: day0 + 5))\"}"
        var (ing, out) = Self.tenDays([ill])
        #expect(out.rejections.isEmpty && out.series("well")[6] == 10, "days 4 and 5 left out: \(out.series("well"))")
        out.removeAll()
        Self.send(["{\"id\":\"ill\",\"retracted\":true}"], &ing, &out)
        #expect(out.series("well").keys.min() == 4 && out.series.allSatisfy(\.revised))
        var merged = plain
        for (d, v) in out.series("well") { merged[d] = v }
        #expect(merged == plain)
    }

    /// An injury moved later (day 3 to day 6): days 3–5 are no longer cut by it and are
    /// republished too, not only the days from its new date.
    @Test func aCorrectionRepublishesFromTheEarlierOfItsTwoDates() {
        var (direct, directOut) = Self.tenDays()
        Self.send([Self.injury(6)], &direct, &directOut)
        var (ing, out) = Self.tenDays()
        Self.send([Self.injury(3)], &ing, &out)
        Self.send([Self.injury(6)], &ing, &out)
        #expect(ing.engine.state(of: "u")!.boundaries == [day0 + 6])
        #expect(Self.latest(out) == Self.latest(directOut), "corrected: \(Self.latest(out)); recorded at day 6: \(Self.latest(directOut))")
    }

    @Test func aRetractionOfAnUnknownEntryIsRejectedAndChangesNothing() {
        var (ing, out) = Self.tenDays()
        Self.send([Self.injury(5)], &ing, &out)
        let before = ing.engine.state(of: "u")!.events
        out.removeAll()
        Self.send(["{\"id\":\"nope\",\"retracted\":true}", "{\"id\":\"inj\",\"retracted\":false}"], &ing, &out)
        #expect(out.rejectionReasons == ["unknown_entry", "invalid_field"])
        #expect(out.rejections.map(\.index) == [0, 1] && out.rejections.first?.itemID == "nope")
        #expect(out.series.isEmpty)
        #expect(ing.engine.state(of: "u")!.events == before)
    }

    @Test func theEngineRetractsOnlyWhatItHolds() {
        var engine = Engine(program: program(Self.rules))
        let unknownUser = engine.retract(event: "x", user: "nobody")
        #expect(!unknownUser)
        #expect(engine.userCount == 0, "asking created no user")
        let e = TimelineEvent(id: "hw", category: .annotation, kind: "heat_wave", firstDay: day0, lastDay: day0 + 3)
        engine.record(event: e, user: "u")
        #expect(engine.entry("hw", of: "u") == e)
        let other = engine.retract(event: "other", user: "u")
        #expect(!other)
        let held = engine.retract(event: "hw", user: "u")
        #expect(held)
        #expect(engine.timeline(of: "u").isEmpty)
        #expect(engine.state(of: "u")!.revisedDays.isEmpty, "no day had closed")
    }
}
