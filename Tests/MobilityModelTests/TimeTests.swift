import Foundation
import MobilityModel
import TestSupport
import Testing

@Suite struct ISO8601Tests {
    @Test(arguments: [
        ("2026-03-01T08:15:00Z", Int64(1_772_352_900_000), Int32(0)),
        ("2026-03-01T08:15:00.250Z", 1_772_352_900_250, 0),
        ("2026-03-01T00:15:00-08:00", 1_772_352_900_000, -28_800),
        ("2026-03-01T09:15:00+0100", 1_772_352_900_000, 3600),
        ("2026-03-01 00:15:00 -0800", 1_772_352_900_000, -28_800)
    ])
    func parsesForms(text: String, millis: Int64, offset: Int32) throws {
        let (t, o) = try #require(ISO8601.parse(text))
        #expect(t.milliseconds == millis)
        #expect(o == offset)
    }

    @Test(arguments: [
        "", "2026-03-01", "2026-03-01T08:15:00", "2026-02-30T00:00:00Z", "2026-13-01T00:00:00Z",
        "2026-03-01T24:00:00Z", "2026-03-01T08:15:00Zjunk", "2026-03-01T08:15:00+25:00", "yesterday"
    ])
    func rejectsInvalid(text: String) {
        #expect(ISO8601.parse(text) == nil)
    }

    @Test func formatRoundTrips() throws {
        var rng = SplitMix64(seed: 42)
        for _ in 0..<2000 {
            let ms = Int64.random(in: -2_000_000_000_000...4_000_000_000_000, using: &rng)
            let off = Int32.random(in: -50...56, using: &rng) * 900
            let text = ISO8601.format(Timestamp(milliseconds: ms), offsetSeconds: off)
            let (t, o) = try #require(ISO8601.parse(text), "seed \(rng.seed): \(text)")
            #expect(t.milliseconds == ms && o == off, "seed \(rng.seed): \(text)")
        }
    }
}

@Suite struct CalendarTests {
    @Test func civilDateRoundTrips() {
        var rng = SplitMix64(seed: 7)
        for _ in 0..<5000 {
            let d = Int32.random(in: -800_000...800_000, using: &rng)
            #expect(CivilDate(dayNumber: d).dayNumber == d, "seed \(rng.seed)")
        }
        #expect(CivilDate(year: 1970, month: 1, day: 1).dayNumber == 0)
        #expect(CivilDate(year: 2024, month: 2, day: 29).description == "2024-02-29")
    }

    @Test func dstDaysHave23And25Hours() throws {
        let la = try #require(LocalCalendar(identifier: "America/Los_Angeles"))
        let spring = CivilDate(year: 2026, month: 3, day: 8).dayNumber
        let fall = CivilDate(year: 2026, month: 11, day: 1).dayNumber
        #expect(la.hours(in: spring) == 23)
        #expect(la.hours(in: fall) == 25)
        #expect(la.hours(in: spring + 1) == 24)
        // 23:30 on the 25-hour day is still that day.
        let late = try #require(ISO8601.parse("2026-11-01T23:30:00-08:00")).0
        #expect(la.day(of: late) == fall)
        // the hour after midnight belongs to the new day, the minute before to the old one
        #expect(la.day(of: la.startOfDay(fall)) == fall)
        #expect(la.day(of: la.startOfDay(fall).adding(seconds: -1)) == fall - 1)
    }

    @Test(arguments: [
        "Europe/Zurich", "America/Los_Angeles", "America/Santiago", "Europe/Moscow", "Australia/Lord_Howe",
        "Pacific/Apia", "Asia/Kolkata", "Africa/Casablanca", "UTC"
    ])
    func offsetTableAgreesWithTheZone(identifier: String) throws {
        // The calendar reads offsets from a transition table; the zone itself is the reference,
        // at random instants 1900–2100 and at each side of every transition in the table.
        let cal = try #require(LocalCalendar(identifier: identifier))
        func zone(_ s: Int64) -> Int64 { Int64(cal.timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(s)))) }
        var rng = SplitMix64(seed: 7)
        for _ in 0..<3000 {
            let s = Int64.random(in: -2_208_988_800..<4_102_444_800, using: &rng)
            #expect(cal.offset(at: Timestamp(seconds: s)) == zone(s), "\(identifier) at \(s)")
        }
        var t = Date(timeIntervalSince1970: 0)
        var transitions = 0
        while let next = cal.timeZone.nextDaylightSavingTimeTransition(after: t), next.timeIntervalSince1970 < 2_000_000_000 {
            let s = Int64(next.timeIntervalSince1970)
            for probe in [s - 1, s, s + 1] { #expect(cal.offset(at: Timestamp(seconds: probe)) == zone(probe), "\(identifier) at \(probe)") }
            transitions += 1
            t = next
        }
        #expect(identifier == "UTC" || identifier == "Asia/Kolkata" || transitions > 0)
    }

    @Test func midnightSkippedByDST() throws {
        // Santiago moves clocks forward at 00:00: local midnight does not exist that day.
        let cal = try #require(LocalCalendar(identifier: "America/Santiago"))
        let d = CivilDate(year: 2026, month: 9, day: 6).dayNumber
        let start = cal.startOfDay(d)
        #expect(cal.day(of: start) == d)
        #expect(cal.day(of: start.adding(seconds: -1)) == d - 1)
    }

    @Test func travellerSampleLandsInItsOwnLocalDay() throws {
        // 08:30 in Tokyo on 10 May is 23:30 UTC and 16:30 in Los Angeles on 9 May.
        let t = try #require(ISO8601.parse("2026-05-10T08:30:00+09:00"))
        let home = try #require(LocalCalendar(identifier: "America/Los_Angeles"))
        let zoned = Sample(id: "a", metric: .walkingSpeed, value: 1, start: t.0, end: t.0, utcOffset: 0, timeZone: "Asia/Tokyo")
        #expect(CivilDate(dayNumber: zoned.localDay(default: home)).description == "2026-05-10")
        let offsetOnly = Sample(id: "b", metric: .walkingSpeed, value: 1, start: t.0, end: t.0, utcOffset: t.1)
        #expect(CivilDate(dayNumber: offsetOnly.localDay(default: home)).description == "2026-05-10")
        let utc = Sample(id: "c", metric: .walkingSpeed, value: 1, start: t.0, end: t.0, utcOffset: 0)
        #expect(CivilDate(dayNumber: utc.localDay(default: home)).description == "2026-05-09")
    }
}
