import CareReports
import MobilityModel
import Testing

/// ISO 8601 weeks on local day numbers, year edges included.
@Suite struct ISOWeekTests {
    static func day(_ s: String) -> DayNumber { CivilDate(parsing: Substring(s))!.dayNumber }

    @Test(arguments: [
        ("2026-03-02", "2026-W10"), ("2026-03-08", "2026-W10"), ("2026-03-09", "2026-W11"),
        ("2025-12-29", "2026-W01"),  // 2026 begins on a Thursday: its week 1 starts in 2025
        ("2026-12-28", "2026-W53"), ("2027-01-03", "2026-W53"), ("2027-01-04", "2027-W01"),
        ("2021-01-03", "2020-W53"), ("2021-01-04", "2021-W01"), ("2024-12-30", "2025-W01"),
        ("1969-12-29", "1970-W01"), ("1970-01-01", "1970-W01")
    ])
    func theWeekOfADay(date: String, week: String) {
        #expect(ISOWeek(containing: Self.day(date)).description == week)
    }

    @Test func mondaysSundaysAndNeighbours() throws {
        let w53 = try #require(ISOWeek(parsing: "2026-W53"))
        #expect(w53.monday == Self.day("2026-12-28") && w53.sunday == Self.day("2027-01-03"))
        #expect(w53.next.description == "2027-W01" && w53.next.monday == Self.day("2027-01-04"))
        #expect(w53.next.previous == w53)
        #expect(try #require(ISOWeek(parsing: "2026-W10")).monday == Self.day("2026-03-02"))
        #expect(try #require(ISOWeek(parsing: "2027-W01")).previous.description == "2026-W53")
        for d in Self.day("2026-12-28")...Self.day("2027-01-03") { #expect(ISOWeek(containing: d) == w53) }
        #expect(ISOWeek.weekday(Self.day("2026-03-02")) == 0 && ISOWeek.weekday(Self.day("2026-03-08")) == 6)
    }

    @Test(arguments: ["2025-W53", "+026-W10", "2026-W00", "2026-W54", "2026-10", "2026-w10", "26-W10", "2026-W1", "2026-W+1", ""])
    func malformedOrNonexistentWeeksAreRefused(text: String) {
        #expect(ISOWeek(parsing: text) == nil)
    }

    @Test func yearsWith53Weeks() {
        // Years beginning on a Thursday, or leap years beginning on a Wednesday.
        #expect([2015, 2020, 2026, 2032].allSatisfy { ISOWeek.weeks(in: $0) == 53 })
        #expect([2021, 2022, 2023, 2024, 2025, 2027].allSatisfy { ISOWeek.weeks(in: $0) == 52 })
    }
}
