import MobilityModel
import MobilityWire
import RuleEngine
import StateStore
import Testing

@testable import MobilityDaemon

/// The acknowledgement screen over a desk that holds an acknowledgement in a real SQLite store.
@Suite struct AcknowledgementScreenTests {
    static let ack = AlertAcknowledgement(by: "nurse.kim", at: OutputPipelineTests.wall, note: "seen")

    /// A desk whose store holds an acknowledgement of `OutputPipelineTests.alert()`.
    static func desk() throws -> AcknowledgementDesk {
        let store = try OutputPipelineTests.store()
        let a = OutputPipelineTests.alert()
        let stored = StoredAcknowledgement(alert: a.id, user: a.user, rule: a.rule, team: "ward-a", acknowledgement: ack, payload: a.jsonBytes)
        let entry = AuditEntry(at: ack.at, action: "acknowledge", actor: ack.by, team: "ward-a", user: a.user, rule: a.rule, subject: a.id, note: ack.note)
        _ = try store.recordAcknowledgement(stored, audit: entry) { _ in [] }
        let desk = AcknowledgementDesk(
            layout: TopicLayout(), store: store, sink: FencedCommandTests.Captured(), teams: CareTeams(assigned: ["u1": ["ward-a"]]),
            log: Logger(format: .logfmt, level: .error), publishNow: { _, _ in })
        try desk.restore()
        return desk
    }

    @Test func anAcknowledgedInstancesReminderIsDroppedAndStillRecorded() throws {
        let screen = AcknowledgementScreen(desk: try Self.desk(), recordsHistory: true)
        let other = OutputPipelineTests.alert("u2", isRepeat: true)
        var out: [EngineOutput] = [.alert(OutputPipelineTests.alert(isRepeat: true)), .alert(other)]
        let rows = screen.screen(&out)
        #expect(out == [.alert(other)])
        var marked = OutputPipelineTests.alert(isRepeat: true)
        marked.acknowledged = Self.ack
        #expect(rows == [.alert(marked)])
    }

    @Test func anAcknowledgedInstanceFiringAgainCarriesItsAcknowledgement() throws {
        let screen = AcknowledgementScreen(desk: try Self.desk(), recordsHistory: true)
        var out: [EngineOutput] = [.alert(OutputPipelineTests.alert())]
        #expect(screen.screen(&out).isEmpty)
        guard case .alert(let a) = out.first else { Issue.record("the firing transition was dropped"); return }
        #expect(a.acknowledged == Self.ack)
    }

    @Test func withoutHistoryADroppedReminderHasNoRow() throws {
        let screen = AcknowledgementScreen(desk: try Self.desk(), recordsHistory: false)
        var out: [EngineOutput] = [.alert(OutputPipelineTests.alert(isRepeat: true))]
        #expect(screen.screen(&out).isEmpty)
        #expect(out.isEmpty)
    }

    @Test func withoutADeskNothingIsDropped() {
        let screen = AcknowledgementScreen(desk: nil, recordsHistory: true)
        var out: [EngineOutput] = [.alert(OutputPipelineTests.alert(isRepeat: true))]
        #expect(screen.screen(&out).isEmpty)
        #expect(out.count == 1)
    }
}
