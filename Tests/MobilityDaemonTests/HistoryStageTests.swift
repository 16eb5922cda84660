import MobilityModel
import RuleEngine
import StateStore
import Testing

@testable import MobilityDaemon

/// Which outputs are history rows.
@Suite struct HistoryStageTests {
    static let point = SeriesPoint(user: "u1", name: "speed", day: OutputPipelineTests.day, value: 1.2, unit: "m/s")

    @Test func alertsAndSeriesAreRowsRejectionsAreNot() {
        let h = HistoryStage(records: true)
        #expect(h.row(.alert(OutputPipelineTests.alert())) == .alert(OutputPipelineTests.alert()))
        #expect(h.row(.series(Self.point)) == .series(Self.point))
        #expect(h.row(.rejected(user: "u1", topic: "t", .init(.notJSON, "bad"))) == nil)
    }

    @Test func withHistoryOffNothingIsARow() {
        let h = HistoryStage(records: false)
        #expect(h.row(.alert(OutputPipelineTests.alert())) == nil)
        #expect(h.row(.series(Self.point)) == nil)
    }
}
