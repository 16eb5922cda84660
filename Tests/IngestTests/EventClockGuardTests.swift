import EngineTestSupport
import MobilityModel
import RuleLanguage
import Testing

@testable import Ingest
@testable import RuleEngine

/// In event-clock mode one outlier timestamp must not move a user's clock.
@Suite struct EventClockGuardTests {
    static let rules = TimelineBoundsTests.rules
    static let hours = [8, 11, 14, 17]

    /// Days `days` of traffic for `u`, one message per hour listed.
    static func messages(_ days: some Sequence<Int>, user u: String = "u") -> [(String, [UInt8])] {
        days.flatMap { d in hours.map { h in (WireTraffic.samplesTopic(u), WireTraffic.samples("s", day: d, hours: [h])) } }
    }

    static let outlier = (WireTraffic.samplesTopic("u"), WireTraffic.sample("outlier", at: ISO8601.parse("2027-01-01T00:00:00Z")!.0))

    static func run(_ ing: inout Ingestor, _ msgs: [(String, [UInt8])]) -> [EngineOutput] {
        var out: [EngineOutput] = []
        for (t, p) in msgs { ing.handle(topic: t, payload: p, now: Timestamp(milliseconds: 0), into: &out) }
        return out
    }

    @Test func oneOutlierSampleNeitherClosesEmptyDaysNorMakesRealDataTooLate() {
        var ing = Ingestor(engine: Engine(program: program(Self.rules)), clock: .event)
        let before = Self.run(&ing, Self.messages(0..<10))
        #expect(before.rejections.isEmpty)
        let out = Self.run(&ing, [Self.outlier] + Self.messages(10..<12))
        #expect(out.rejections.isEmpty, "\(out.rejections.prefix(3))")
        #expect(out.alerts.isEmpty, "\(out.alerts.prefix(3).map(\.headline))")
        // Days close as the real data goes: up to day 10 (the clock is on day 11), none beyond.
        #expect(Set(out.series.map { Int($0.day.dayNumber - day0) }) == [9, 10])
        #expect(ing.engine.state(of: "u")!.lastClosedDay == day0 + 10)
        // The outlier itself is held (accepted) on its own day, which has not closed.
        #expect(ing.engine.state(of: "u")!.openDays.last?.day == CivilDate(year: 2027, month: 1, day: 1).dayNumber)
    }

    @Test func aSmallGroupOfOutliersInOneMessageMovesNothingEither() {
        var ing = Ingestor(engine: Engine(program: program(Self.rules)), clock: .event)
        _ = Self.run(&ing, Self.messages(0..<10))
        let group = WireTraffic.samples("bad", day: 400, hours: [1, 2, 3, 4, 5])
        let out = Self.run(&ing, [(WireTraffic.samplesTopic("u"), group)] + Self.messages(10..<11))
        #expect(out.rejections.isEmpty)
        #expect(out.alerts.isEmpty)
        #expect(ing.engine.state(of: "u")!.lastClosedDay == day0 + 9)
    }

    @Test func aRealGapStillClosesItsDaysOnceTheUsersTrafficConfirmsIt() {
        var ing = Ingestor(engine: Engine(program: program(Self.rules)), clock: .event)
        _ = Self.run(&ing, Self.messages(0..<5))
        // Nothing on days 5–9, then the user is back: three messages on day 10 confirm the jump.
        let out = Self.run(&ing, Self.messages(10..<12))
        #expect(out.rejections.isEmpty)
        #expect(ing.engine.state(of: "u")!.lastClosedDay == day0 + 10)
        let gap = out.alerts.filter { $0.rule == "gap" && $0.status == .firing }
        #expect(gap.map { Int($0.day.dayNumber - day0) } == [7])
    }

    @Test func theReplayToolIsGuardedTheSameWay() {
        var replay = Replay(program: program(Self.rules), configuration: EngineConfiguration())
        var lines: [String] = []
        for (t, p) in Self.messages(0..<10) + [Self.outlier] + Self.messages(10..<12) {
            switch replay.feed(line: Array(TrafficRecord(topic: t, payload: p).line.utf8)) {
            case .success(let l): lines += l.outputs
            case .failure(let e): Issue.record("\(e)")
            }
        }
        #expect(!lines.contains { $0.contains("\"day\":\"2026-02") || $0.contains("\"day\":\"2027") }, "days past the real data were closed")
        #expect(!lines.contains { $0.contains("\"rule\":\"gap\"") })
        #expect(replay.ingestor.counters.rejected.isEmpty)
        #expect(replay.ingestor.engine.state(of: "u")!.lastClosedDay == day0 + 10)
    }
}

extension EventClockGuardTests {
    @Test func theDaemonsWallClockBoundsTheEventClock() {
        var ing = Ingestor(engine: Engine(program: program(Self.rules)), clock: .event, boundedByWallClock: true)
        let wall = close(20)
        var out: [EngineOutput] = []
        for (t, p) in Self.messages(0..<10) { ing.handle(topic: t, payload: p, now: wall, into: &out) }
        #expect(out.rejections.isEmpty)
        // Three messages after the wall clock: refused as in the future, the clock stays.
        for k in 0..<3 { ing.handle(topic: WireTraffic.samplesTopic("u"), payload: WireTraffic.samples("f\(k)", day: 40, hours: [k]), now: wall, into: &out) }
        #expect(out.rejectionReasons == ["in_future", "in_future", "in_future"])
        #expect(ing.eventNow("u")?.milliseconds == utc.startOfDay(day0 + 9).adding(seconds: 17 * 3600).milliseconds)
        // Before the user's first sample, an entry is bounded by the wall clock too.
        out.removeAll()
        ing.handle(
            topic: WireTraffic.eventsTopic("new"), payload: WireTraffic.events(["{\"id\":\"i\",\"kind\":\"injury\",\"date\":\"2026-03-01\"}"]), now: wall,
            into: &out)
        #expect(out.rejectionReasons == ["date_out_of_range"])
    }
}
