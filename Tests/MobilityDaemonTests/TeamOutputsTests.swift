import MobilityModel
import MobilityWire
import StateStore
import Testing

@testable import MobilityDaemon

/// The team fan-out: an alert's copies under each of its user's care teams, and what a change of
/// teams publishes.
@Suite struct TeamOutputsTests {
    static let layout = TopicLayout()

    @Test func eachTeamGetsTheUserItemsPayloadsAndRetainFlags() {
        var t = TeamOutputs(careTeams: CareTeams(assigned: ["u1": ["ward-a", "ward-b"]]), layout: Self.layout)
        let a = OutputPipelineTests.alert(status: .resolved)
        let user = OutputPipeline.userItems(.alert(a), layout: Self.layout)
        let copies = t.alertItems(a, userItems: user)
        #expect(copies.map(\.topic) == ["ward-a", "ward-a", "ward-b", "ward-b"].map { Self.layout.teamAlert($0, user: "u1", rule: a.rule) })
        #expect(copies.map(\.retain) == [false, true, false, true])
        #expect(copies.map(\.payload) == user.map(\.payload) + user.map(\.payload))
    }

    @Test func theMappingFileOverridesAProfile() {
        var t = TeamOutputs(careTeams: CareTeams(assigned: ["u1": ["ward-a"]]), layout: Self.layout)
        #expect(t.profileTeams(["ward-b"], user: "u1", rules: ["r"]) { Array("report".utf8) }.isEmpty)
    }

    @Test func aUserOfNoTeamHasNoCopies() {
        var t = TeamOutputs(careTeams: CareTeams(), layout: Self.layout)
        let a = OutputPipelineTests.alert()
        #expect(t.alertItems(a, userItems: OutputPipeline.userItems(.alert(a), layout: Self.layout)).isEmpty)
    }

    @Test func aTeamJoinedGetsTheFiringAlertsAndTheReportATeamLeftIsCleared() {
        var t = TeamOutputs(careTeams: CareTeams(), layout: Self.layout)
        #expect(t.profileTeams(["ward-a"], user: "u1", rules: []) { nil }.isEmpty)  // no alert fired, no report yet
        let a = OutputPipelineTests.alert()
        _ = t.alertItems(a, userItems: OutputPipeline.userItems(.alert(a), layout: Self.layout))
        var reportRead = false
        let items = t.profileTeams(["ward-b"], user: "u1", rules: [a.rule]) {
            reportRead = true
            return Array("report".utf8)
        }
        #expect(reportRead)
        #expect(
            items.map(\.topic) == [
                Self.layout.teamAlert("ward-a", user: "u1", rule: a.rule), Self.layout.teamWeeklyReport("ward-a", user: "u1"),
                Self.layout.teamAlert("ward-b", user: "u1", rule: a.rule), Self.layout.teamWeeklyReport("ward-b", user: "u1")
            ])
        #expect(items.map(\.payload) == [[], [], a.jsonBytes, Array("report".utf8)])
        #expect(items.allSatisfy { $0.retain })
    }
}
