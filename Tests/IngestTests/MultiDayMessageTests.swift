import EngineTestSupport
import Foundation
import MobilityModel
import RuleLanguage
import Testing

@testable import Ingest
@testable import RuleEngine

/// Phones that sync every few days and Apple Health exports send messages spanning several days;
/// gateways and clinicians send timeline entries before or after the samples of their day. None of
/// it may be lost, and the alerts may not depend on how the samples were packed into messages.
@Suite struct MultiDayMessageTests {
    static let rules = TimelineBoundsTests.rules
    static let hours = [8, 11, 14, 17, 20]

    /// One message of the samples of `days` (all hours of each).
    static func sync(_ days: ClosedRange<Int>, user u: String = "u") -> (String, [UInt8]) {
        let items = days.map { d in String(decoding: WireTraffic.samples("s", day: d, hours: hours).dropFirst().dropLast(), as: UTF8.self) }
        return (WireTraffic.samplesTopic(u), Array(("[" + items.joined(separator: ",") + "]").utf8))
    }

    static func outputs(_ ing: inout Ingestor, _ msgs: [(String, [UInt8])], wall: Timestamp = Timestamp(milliseconds: 0)) -> [EngineOutput] {
        var out: [EngineOutput] = []
        for (t, p) in msgs { ing.handle(topic: t, payload: p, now: wall, into: &out) }
        return out
    }

    @Test func aSyncSpanningMoreThanTheLatenessLosesNoSample() {
        // An export's first message: ten days at once, then the rest a day at a time.
        var ing = Ingestor(engine: Engine(program: program(Self.rules)), clock: .event)
        let out = Self.outputs(&ing, [Self.sync(0...9)] + (10...12).map { Self.sync($0...$0) })
        #expect(out.rejections.isEmpty, "\(out.rejections.prefix(2))")
        #expect(ing.counters.samplesAccepted == 13 * Self.hours.count)
        // Late data is still judged against what came before the message.
        let late = Self.outputs(&ing, [(WireTraffic.samplesTopic("u"), WireTraffic.samples("old", day: 2, hours: [9]))])
        #expect(late.rejectionReasons == ["too_late"])
    }

    /// A sync of continuous days moves the user's clock through its last sample, as the same
    /// samples one a message would; a jump after a gap still waits for confirmation.
    @Test func aContinuousSyncMovesTheClockAndAGapStillNeedsConfirmation() {
        var synced = Ingestor(engine: Engine(program: program(Self.rules)), clock: .event)
        var single = Ingestor(engine: Engine(program: program(Self.rules)), clock: .event)
        let a = Self.outputs(&synced, [Self.sync(0...2), Self.sync(3...5), Self.sync(6...8)])
        let b = Self.outputs(
            &single, (0...8).flatMap { d in Self.hours.map { h in (WireTraffic.samplesTopic("u"), WireTraffic.samples("s", day: d, hours: [h])) } })
        #expect(synced.eventNow("u") == single.eventNow("u") && synced.eventNow("u") != nil)
        #expect(a.alerts == b.alerts && a.series == b.series)
        #expect(synced.engine.state(of: "u")!.lastClosedDay == day0 + 7)
        // Three days without data, then one message: a claim, the clock stays.
        _ = Self.outputs(&synced, [Self.sync(12...13)])
        #expect(synced.clocks["u"]!.claims.count == 1)
        #expect(synced.engine.state(of: "u")!.lastClosedDay == day0 + 7)
    }

    /// One outlier sample a year ahead in a sync is a claim, not part of the chain.
    @Test func anOutlierInASyncDoesNotMoveTheClock() {
        var ing = Ingestor(engine: Engine(program: program(Self.rules)), clock: .event)
        _ = Self.outputs(&ing, [Self.sync(0...2)])
        let now = ing.eventNow("u")
        var (topic, payload) = Self.sync(3...5)
        payload.removeLast()
        payload += Array(("," + String(decoding: WireTraffic.sample("far", at: ISO8601.parse("2027-06-01T00:00:00Z")!.0), as: UTF8.self) + "]").utf8)
        let out = Self.outputs(&ing, [(topic, payload)])
        #expect(out.rejections.isEmpty)
        #expect(ing.eventNow("u")! > now! && ing.eventNow("u")! < ISO8601.parse("2026-02-01T00:00:00Z")!.0)
        #expect(ing.clocks["u"]!.claims.count == 1)
    }

    /// The end of a bounded input closes each user's days through the last sample, even when the
    /// last messages came after a gap and were never confirmed.
    @Test func theEndOfABoundedInputClosesThroughTheLastDay() {
        var replay = Replay(program: program(Self.rules), configuration: EngineConfiguration())
        for (t, p) in [Self.sync(0...4), Self.sync(9...10), Self.sync(11...12)] {
            if case .failure(let e) = replay.feed(line: Array(TrafficRecord(topic: t, payload: p).line.utf8)) { Issue.record("\(e)") }
        }
        #expect(replay.ingestor.engine.state(of: "u")!.lastClosedDay == day0 + 3)
        let fed = replay.finish()
        #expect(replay.ingestor.engine.state(of: "u")!.lastClosedDay == day0 + 12)
        // The gap (days 5–8) is reported as a gap once the later days are evaluated.
        #expect(fed.outputs.contains { $0.contains("\"rule\":\"gap\"") && $0.contains("\"firing\"") })
    }

    /// An injury dated after the user's latest sample (the phone syncs days later) is kept, in
    /// a replay and in the daemon, where only the wall clock bounds it.
    @Test func anEntryDatedAfterTheUsersSamplesIsKept() {
        let injury = "{\"id\":\"inj\",\"kind\":\"injury\",\"date\":\"\(CivilDate(dayNumber: day0 + 8))\"}"
        for bounded in [false, true] {
            var ing = Ingestor(engine: Engine(program: program(Self.rules)), clock: .event, boundedByWallClock: bounded)
            let wall = close(30)
            var out = Self.outputs(&ing, [Self.sync(0...2)], wall: wall)
            out += Self.outputs(&ing, [(WireTraffic.eventsTopic("u"), WireTraffic.events([injury]))], wall: wall)
            #expect(out.rejections.isEmpty, "bounded \(bounded): \(out.rejections)")
            #expect(ing.engine.state(of: "u")!.boundaries == [day0 + 8])
        }
        // The wall clock still bounds it: an entry after the daemon's today is refused.
        var ing = Ingestor(engine: Engine(program: program(Self.rules)), clock: .event, boundedByWallClock: true)
        let out = Self.outputs(&ing, [Self.sync(0...2), (WireTraffic.eventsTopic("u"), WireTraffic.events([injury]))], wall: close(5))
        #expect(out.rejectionReasons == ["date_out_of_range"])
        #expect(out.rejections.first?.detail.contains("after today") == true)
    }

    /// A user without a profile takes the zone of their samples: the days close at the user's own
    /// midnights, so evening samples are not late for a day evaluated at UTC's midnight.
    @Test func aUserWithoutAProfileTakesTheZoneOfTheSamples() throws {
        let la = try #require(LocalCalendar(identifier: "America/Los_Angeles"))
        func payload(_ items: [(String, Int, Int)]) -> [UInt8] {
            let json = items.map { (id, d, h) in
                let t = la.startOfDay(day0 + DayNumber(d)).adding(seconds: Int64(h * 3600))
                return
                    "{\"id\":\"\(id)\",\"type\":\"walkingSpeed\",\"value\":1.1,\"unit\":\"m/s\",\"start\":\"\(t)\",\"end\":\"\(t)\",\"timeZone\":\"America/Los_Angeles\",\"source\":{\"bundleId\":\"b\"}}"
            }
            return Array(("[" + json.joined(separator: ",") + "]").utf8)
        }
        let items = (0..<6).flatMap { d in [9, 16, 18, 21].map { h in ("s\(d)-\(h)", d, h) } }
        var one = Ingestor(engine: Engine(program: program(Self.rules)), clock: .event)
        var batched = Ingestor(engine: Engine(program: program(Self.rules)), clock: .event)
        let a = Self.outputs(&one, items.map { (WireTraffic.samplesTopic("u"), payload([$0])) })
        let b = Self.outputs(
            &batched, stride(from: 0, to: items.count, by: 7).map { (WireTraffic.samplesTopic("u"), payload(Array(items[$0..<min($0 + 7, items.count)]))) })
        #expect(one.engine.calendar(of: "u") == la)
        #expect(a.series == b.series && a.alerts == b.alerts)
        // Every closed day counted all four of its samples: none was late for its day.
        #expect(a.series.filter { $0.name == "n" && !$0.revised }.allSatisfy { $0.value == 4 })
        #expect(!a.series.contains { $0.revised })
    }
}

extension MultiDayMessageTests {
    /// A user's first message is judged against its latest continuous run of samples: an outlier
    /// years back is late, not the first of thousands of empty days.
    @Test func aNewUsersFirstMessageCannotCloseYearsOfDays() {
        var ing = Ingestor(engine: Engine(program: program(Self.rules)), clock: .event, boundedByWallClock: true)
        var out: [EngineOutput] = []
        let old = utc.startOfDay(day0 - 3000).adding(seconds: 43_200)
        let recent = utc.startOfDay(day0).adding(seconds: 43_200)
        let items = [WireTraffic.sample("a", at: old), WireTraffic.sample("b", at: recent)].map { String(decoding: $0, as: UTF8.self) }
        ing.handle(topic: WireTraffic.samplesTopic("u"), payload: Array(("[" + items.joined(separator: ",") + "]").utf8), now: close(0), into: &out)
        ing.handle(topic: WireTraffic.samplesTopic("u"), payload: WireTraffic.samples("c", day: 1, hours: [12]), now: close(1), into: &out)
        #expect(out.rejectionReasons == ["too_late"])
        #expect(out.series.count < 20, "\(out.series.count) series points")
        #expect(ing.engine.state(of: "u")!.firstDay == day0)
    }
}
