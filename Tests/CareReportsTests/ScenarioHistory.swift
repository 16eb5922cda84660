import CareReports
import Ingest
import MobilityModel
import RuleEngine
import RuleLanguage
import Simulator
import TestSupport
import Testing

/// Histories of the shipped scenarios, built the way the daemon's history is: the scenario's
/// traffic through the in-process engine with the shipped rules, and every output recorded with
/// ``UserHistory/record(_:)`` (series points in SI from their unit, a revised day replacing its
/// value; every alert transition, reminders included, folded into episodes), the timeline from
/// the engine's state (the clinical events and annotations the traffic sent). The spec is the
/// shipped rules' `report` block.
enum ScenarioHistory {
    /// The shipped rules, checked.
    static let program: Program = {
        let loaded = RuleSet.load([RepoPaths.rules])
        precondition(loaded.errors.isEmpty, "\(loaded.errors)")
        guard let p = Checker.check(loaded.sources).program else { preconditionFailure("the shipped rules do not check") }
        return p
    }()

    /// The report spec the shipped rules declare (rules/report.rules).
    static let spec: ReportSpec = {
        guard let declared = program.report else { preconditionFailure("the shipped rules declare no report block") }
        return ReportSpec(declared)
    }()

    /// The history of shipped scenario `name` (e.g. `jamie-plateau`), with the engine's outputs.
    static func replay(_ name: String) throws -> (UserHistory, Scenario, [EngineOutput]) {
        let scenario = try Scenario.load(RepoPaths.root + "/simulator/scenarios/\(name).scenario")
        var ingestor = Ingestor(engine: Engine(program: program, configuration: EngineConfiguration()), clock: .event)
        var out: [EngineOutput] = []
        for r in ScenarioVerifier.traffic([scenario]) { ingestor.handle(topic: r.topic, payload: r.payload, now: Timestamp(milliseconds: 0), into: &out) }
        ingestor.closeOpenDays(into: &out)
        var h = UserHistory(user: scenario.persona.user)
        for o in out {
            switch o {
            case .series(let p) where p.user == h.user: h.record(p)
            case .alert(let a) where a.user == h.user: h.record(a)
            default: break
            }
        }
        for e in ingestor.engine.timeline(of: h.user) { h.record(e) }
        return (h, scenario, out)
    }

    /// The history of shipped scenario `name` (e.g. `jamie-plateau`).
    static func load(_ name: String) throws -> (UserHistory, Scenario) {
        let (h, s, _) = try replay(name)
        return (h, s)
    }

    /// The scenario's local day of its 1-based day index.
    static func day(_ s: Scenario, _ index: Int) -> DayNumber { s.timeline.start.dayNumber - 1 + DayNumber(index) }
}
