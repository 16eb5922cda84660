import MobilityModel
import MobilityWire
import StateStore
import Testing

@testable import MobilityDaemon

/// The silence stage over a desk that holds a silence of team ward-a in a real SQLite store.
@Suite struct SilenceStageTests {
    static let wall = OutputPipelineTests.wall
    static let layout = TopicLayout()

    /// A desk holding one silence of `user` by ward-a, active an hour either side of the wall clock.
    static func desk(teams: CareTeams, user: String = "u1") throws -> (SilenceDesk, Silence) {
        let store = try OutputPipelineTests.store()
        let m = [try SilenceMatcher(name: "user", value: user)]
        let (from, to) = (Timestamp(milliseconds: wall.milliseconds - 3_600_000), Timestamp(milliseconds: wall.milliseconds + 3_600_000))
        let id = Silence.makeID(team: "ward-a", matchers: m, startsAt: from, endsAt: to, createdBy: "dr.lee", comment: "inpatient")
        let s = Silence(id: id, team: "ward-a", matchers: m, startsAt: from, endsAt: to, createdBy: "dr.lee", comment: "inpatient")
        let entry = AuditEntry(at: from, action: "silence", actor: "dr.lee", team: "ward-a", user: user, rule: "", subject: id, note: nil)
        _ = try store.recordSilence(s, audit: entry) { _ in [] }
        let desk = SilenceDesk(
            layout: layout, store: store, sink: FencedCommandTests.Captured(), teams: teams, log: Logger(format: .logfmt, level: .error),
            labelNames: { [] }, publishNow: { _, _ in })
        try desk.restore()
        return (desk, s)
    }

    /// The user and team items of `a` for `teams`, as the pipeline writes them before the stage.
    static func items(_ a: AlertTransition, teams: CareTeams) -> [StateStore.OutboxItem] {
        var t = TeamOutputs(careTeams: teams, layout: layout)
        let user = OutputPipeline.userItems(.alert(a), layout: layout)
        return user + t.alertItems(a, userItems: user)
    }

    @Test func aSilencedReminderIsMarkedAndItsNotificationsWithheld() throws {
        let teams = CareTeams(assigned: ["u1": ["ward-a"]])
        let (desk, s) = try Self.desk(teams: teams)
        let stage = SilenceStage(desk: desk)
        var a = OutputPipelineTests.alert(isRepeat: true)
        let v = stage.mark(&a, now: Self.wall)
        #expect(a.silencedBy == [s.id])
        var items = Self.items(a, teams: teams)
        #expect(items.count == 2)
        stage.withhold(v, a, items: &items)
        #expect(items.isEmpty)
    }

    @Test func aSilencedResolutionKeepsItsRetainedClears() throws {
        let teams = CareTeams(assigned: ["u1": ["ward-a"]])
        let stage = SilenceStage(desk: try Self.desk(teams: teams).0)
        var a = OutputPipelineTests.alert(status: .resolved)
        let v = stage.mark(&a, now: Self.wall)
        var items = Self.items(a, teams: teams)
        stage.withhold(v, a, items: &items)
        #expect(items.map(\.topic) == [Self.layout.alert("u1", rule: a.rule), Self.layout.teamAlert("ward-a", user: "u1", rule: a.rule)])
        #expect(items.allSatisfy { $0.retain && $0.payload.isEmpty })
    }

    @Test func anotherTeamsCopyIsNotWithheldAndCarriesNoSilence() throws {
        let teams = CareTeams(assigned: ["u1": ["ward-a", "ward-b"]])
        let stage = SilenceStage(desk: try Self.desk(teams: teams).0)
        var a = OutputPipelineTests.alert(isRepeat: true)
        let v = stage.mark(&a, now: Self.wall)
        var items = Self.items(a, teams: teams)
        stage.withhold(v, a, items: &items)
        // Not every team silences it: the user topic and ward-b's copy stay; ward-a's goes.
        #expect(items.map(\.topic) == [Self.layout.alert("u1", rule: a.rule), Self.layout.teamAlert("ward-b", user: "u1", rule: a.rule)])
        #expect(!String(decoding: items[1].payload, as: UTF8.self).contains("silencedBy"))
    }

    @Test func anUnsilencedTransitionIsLeftAsItIs() throws {
        let teams = CareTeams(assigned: ["u1": ["ward-a"], "u2": ["ward-a"]])
        let stage = SilenceStage(desk: try Self.desk(teams: teams).0)
        var a = OutputPipelineTests.alert("u2", isRepeat: true)
        #expect(stage.mark(&a, now: Self.wall) == nil)
        #expect(a.silencedBy == nil)
        var b = OutputPipelineTests.alert(isRepeat: true)
        #expect(SilenceStage(desk: nil).mark(&b, now: Self.wall) == nil)
        var items = Self.items(a, teams: teams)
        stage.withhold(nil, a, items: &items)
        #expect(items.count == 2)
    }
}
