import CareReports
import MobilityModel
import RuleLanguage
import StateStore
import Testing

@testable import MobilityDaemon

/// A week is due once, from the first publication of its Sunday's series.
@Suite struct ReportMarkersTests {
    static func point(_ day: CivilDate, revised: Bool = false, user: String = "u1") -> SeriesPoint {
        SeriesPoint(user: user, name: "speed", day: day, value: 1, unit: "m/s", revised: revised)
    }
    static let sunday = OutputPipelineTests.day
    static let saturday = CivilDate(year: 2026, month: 3, day: 7)

    @Test func aSundayMarksItsWeekDueOnce() throws {
        var m = ReportMarkers(program: try ReportWorkerTests.program(), historyDays: 90)
        #expect(m.marker(Self.point(Self.saturday)) == nil)
        let week = try #require(WeeklyReports.closes(Self.point(Self.sunday)))
        let due = WeeklyReports.Due(user: "u1", week: week)
        #expect(m.marker(Self.point(Self.sunday)) == WeeklyReports.marker(due))
        #expect(m.marker(Self.point(Self.sunday)) == nil)  // the week's second series
        #expect(m.marker(Self.point(Self.sunday, revised: true)) == nil)
        #expect(m.marker(Self.point(Self.sunday, user: "u2")) != nil)
        #expect(m.due.count == 2)
    }

    @Test func withoutHistoryOrAReportBlockNothingIsDue() throws {
        var off = ReportMarkers(program: try ReportWorkerTests.program(), historyDays: nil)
        #expect(off.marker(Self.point(Self.sunday)) == nil)
        off.add(WeeklyReports.Due(user: "u1", week: ISOWeek(containing: Self.sunday.dayNumber)))
        #expect(off.due.isEmpty)

        let bare = try #require(Checker.check(text: "series speed_samples = count(walkingSpeed)").program)
        var none = ReportMarkers(program: bare, historyDays: 90)
        #expect(none.reports == nil && none.marker(Self.point(Self.sunday)) == nil)
        none.reload(try ReportWorkerTests.program())
        #expect(none.marker(Self.point(Self.sunday)) != nil)
    }
}
