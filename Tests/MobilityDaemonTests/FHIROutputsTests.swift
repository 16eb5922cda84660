import MobilityModel
import MobilityWire
import RuleEngine
import StateStore
import Testing

@testable import MobilityDaemon

/// The FHIR copies of a shard's outputs (their resources: MobilityFHIRTests; against the
/// reference validator: ``FHIROutputTests``).
@Suite struct FHIROutputsTests {
    static let root = TopicLayout().root

    @Test func aFlagIsRetainedWhileFiringThenSentAndCleared() throws {
        let f = FHIROutputs(program: try ReportWorkerTests.program(), root: Self.root, observations: true)
        let firing = f.items(.alert(OutputPipelineTests.alert()))
        #expect(firing.count == 1 && firing[0].retain && firing[0].topic.hasPrefix(Self.root + "/fhir/users/u1/Flag/"))
        let resolved = f.items(.alert(OutputPipelineTests.alert(status: .resolved)))
        #expect(resolved.map(\.retain) == [false, true])
        #expect(resolved.map(\.topic) == [firing[0].topic, firing[0].topic])
        #expect(resolved[1].payload.isEmpty)
    }

    @Test func seriesAreObservationsOnlyWhilePublished() throws {
        let program = try ReportWorkerTests.program()
        let name = try #require(program.series.first?.name)
        let p = SeriesPoint(user: "u1", name: name, day: OutputPipelineTests.day, value: 1.2, unit: "m/s")
        let on = FHIROutputs(program: program, root: Self.root, observations: true).items(.series(p))
        #expect(on.count == 1 && !on[0].retain && on[0].topic.hasPrefix(Self.root + "/fhir/users/u1/Observation/"))
        #expect(FHIROutputs(program: program, root: Self.root, observations: false).items(.series(p)).isEmpty)
    }

    @Test func aRejectionHasNoCopy() throws {
        let f = FHIROutputs(program: try ReportWorkerTests.program(), root: Self.root, observations: true)
        #expect(f.items(.rejected(user: "u1", topic: "t", .init(.notJSON, "bad"))).isEmpty)
    }
}
