import Foundation
import MobilityModel
import MobilityWire
import RuleEngine
import RuleLanguage
import StateStore
import TestSupport
import Testing

@testable import MobilityDaemon

/// The shard's output stages composed, in-process: engine outputs in, the outbox items and
/// history rows of the commit out (desks over a real SQLite store, no broker, no process).
@Suite struct OutputPipelineTests {
    static let layout = TopicLayout()
    static let day = CivilDate(year: 2026, month: 3, day: 8)  // a Sunday
    static let wall = Timestamp(milliseconds: 1_772_971_200_000)  // 2026-03-08T12:00:00Z

    /// An alert transition of `user`'s rule `rule`.
    static func alert(_ user: String = "u1", rule: String = "low_speed", status: AlertStatus = .firing, isRepeat: Bool = false) -> AlertTransition {
        let since = Timestamp(milliseconds: wall.milliseconds - 86_400_000)
        return AlertTransition(
            id: AlertTransition.stableID(rule: rule, user: user, activeSince: since), rule: rule, user: user, severity: .warning,
            status: status, activeSince: since, firedAt: since, resolvedAt: status == .firing ? nil : wall, day: day, headline: "slow",
            labels: [("ward", "a")], evidence: [], annotations: [], isRepeat: isRepeat)
    }

    /// A real store in a fresh directory.
    static func store() throws -> StateStore {
        let dir = TemporaryPath.make("mw-stages")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return try StateStore(path: dir + "/state.sqlite")
    }

    /// A pipeline of the shipped rules, without desks.
    static func pipeline(
        teams: CareTeams = CareTeams(), fhir: Bool = false, series: Bool = true, historyDays: Int? = 90,
        acknowledgements: AcknowledgementDesk? = nil, silences: SilenceDesk? = nil
    ) throws -> OutputPipeline {
        let program = try ReportWorkerTests.program()
        return OutputPipeline(
            layout: layout, screen: AcknowledgementScreen(desk: acknowledgements, recordsHistory: historyDays != nil),
            bundler: series ? SeriesBundler(layout: layout) : nil, silences: SilenceStage(desk: silences),
            teams: TeamOutputs(careTeams: teams, layout: layout),
            fhir: fhir ? FHIROutputs(program: program, root: layout.root, observations: series) : nil,
            history: HistoryStage(records: historyDays != nil), markers: ReportMarkers(program: program, historyDays: historyDays))
    }

    @Test func anAlertGoesToItsUserItsTeamsAndTheHistoryInOrder() throws {
        var p = try Self.pipeline(teams: CareTeams(assigned: ["u1": ["ward-a", "ward-b"]]))
        var out: [EngineOutput] = [.alert(Self.alert())]
        var staged = OutputPipeline.Staged()
        p.run(&out, wall: Self.wall, into: &staged)
        let rule = "low_speed"
        #expect(
            staged.outbox.map(\.topic) == [
                Self.layout.alert("u1", rule: rule), Self.layout.teamAlert("ward-a", user: "u1", rule: rule),
                Self.layout.teamAlert("ward-b", user: "u1", rule: rule)
            ])
        #expect(staged.outbox.allSatisfy { $0.retain && $0.payload == Self.alert().jsonBytes })
        #expect(staged.history == [.alert(Self.alert())])
        #expect(staged.seriesMessages == 0)
    }

    @Test func aResolutionIsAMessageThenARetainedClear() throws {
        var p = try Self.pipeline()
        var out: [EngineOutput] = [.alert(Self.alert(status: .resolved))]
        var staged = OutputPipeline.Staged()
        p.run(&out, wall: Self.wall, into: &staged)
        #expect(staged.outbox.map(\.retain) == [false, true])
        #expect(staged.outbox[1].payload.isEmpty)
    }

    @Test func aUserDaysSeriesIsOneMessageAndItsSundayMarksTheWeekDue() throws {
        var p = try Self.pipeline()
        let points = ["speed", "steps"].map { SeriesPoint(user: "u1", name: $0, day: Self.day, value: 1, unit: "m/s") }
        var out = points.map(EngineOutput.series)
        var staged = OutputPipeline.Staged()
        p.run(&out, wall: Self.wall, into: &staged)
        #expect(staged.outbox.map(\.topic) == [Self.layout.series("u1")])
        #expect(staged.seriesMessages == 1)
        let week = try #require(WeeklyReports.closes(points[0]))
        let due = WeeklyReports.Due(user: "u1", week: week)
        // The marker follows the first of the Sunday's points, in output order.
        #expect(staged.history == [.series(points[0]), WeeklyReports.marker(due), .series(points[1])])
        #expect(p.markers.due == [due])
    }

    @Test func withoutPublishedSeriesTheyAreOnlyRecorded() throws {
        var p = try Self.pipeline(fhir: true, series: false)
        var out: [EngineOutput] = [.series(SeriesPoint(user: "u1", name: "speed", day: Self.day, value: 1, unit: "m/s"))]
        var staged = OutputPipeline.Staged()
        p.run(&out, wall: Self.wall, into: &staged)
        #expect(staged.outbox.isEmpty && staged.seriesMessages == 0)
        #expect(staged.history.first == .series(SeriesPoint(user: "u1", name: "speed", day: Self.day, value: 1, unit: "m/s")))
    }

    @Test func fhirCopiesFollowTheUserAndTeamItems() throws {
        var p = try Self.pipeline(teams: CareTeams(assigned: ["u1": ["ward-a"]]), fhir: true)
        var out: [EngineOutput] = [.alert(Self.alert())]
        var staged = OutputPipeline.Staged()
        p.run(&out, wall: Self.wall, into: &staged)
        #expect(staged.outbox.count == 3)
        #expect(staged.outbox[2].topic.hasPrefix(Self.layout.root + "/fhir/users/u1/Flag/"))
    }

    /// A silenced reminder: its user and team notifications are withheld, its FHIR copy (the
    /// clinical record) is not, and its history row is marked with the silence.
    @Test func aSilenceWithholdsNotificationsButNotTheFHIRCopyOrTheHistory() throws {
        let teams = CareTeams(assigned: ["u1": ["ward-a"]])
        let (desk, silence) = try SilenceStageTests.desk(teams: teams)
        var p = try Self.pipeline(teams: teams, fhir: true, silences: desk)
        var out: [EngineOutput] = [.alert(Self.alert(isRepeat: true))]
        var staged = OutputPipeline.Staged()
        p.run(&out, wall: Self.wall, into: &staged)
        #expect(staged.outbox.count == 1)
        #expect(staged.outbox.first?.topic.hasPrefix(Self.layout.root + "/fhir/users/u1/Flag/") == true)
        guard case .alert(let recorded)? = staged.history.first.flatMap({ AlertTransition.parse($0.payload) }).map(EngineOutput.alert) else {
            Issue.record("no alert row: \(staged.history)")
            return
        }
        #expect(recorded.silencedBy == [silence.id])
    }

    @Test func withoutHistoryNothingIsRecordedAndNoWeekIsDue() throws {
        var p = try Self.pipeline(historyDays: nil)
        var out: [EngineOutput] = [.alert(Self.alert()), .series(SeriesPoint(user: "u1", name: "speed", day: Self.day, value: 1, unit: "m/s"))]
        var staged = OutputPipeline.Staged()
        p.run(&out, wall: Self.wall, into: &staged)
        #expect(staged.history.isEmpty)
        #expect(p.markers.due.isEmpty)
        #expect(staged.outbox.count == 2)
    }

    @Test func aRejectionGoesToItsUsersRejectedTopicOnly() throws {
        var p = try Self.pipeline(fhir: true)
        var out: [EngineOutput] = [.rejected(user: "u1", topic: "t", .init(.notJSON, "bad"))]
        var staged = OutputPipeline.Staged()
        p.run(&out, wall: Self.wall, into: &staged)
        #expect(staged.outbox.map(\.topic) == [Self.layout.rejected("u1")])
        #expect(!staged.outbox[0].retain)
        #expect(staged.history.isEmpty)
    }
}
