import CareReports
import MobilityModel
import RuleEngine
import RuleLanguage
import Simulator
import TestSupport
import Testing

/// Histories of the shipped scenarios, built the way the daemon's history is: the scenario's
/// traffic through the in-process engine with the shipped rules, every series point kept (a
/// revised day replacing its value), alert transitions folded into episodes, the scenario's
/// clinical event and annotations on the timeline.
enum ScenarioHistory {
    /// The report spec that matches the shipped rules (what their `report` block will declare).
    static let spec = ReportSpec(
        speed: .init(title: "Walking speed", daily: "speed_p95", smoothed: "speed_7d", baselineDays: 30,
                     displayUnit: DisplayUnit(symbol: "mph", factor: 1 / 0.44704)),
        doubleSupport: .init(title: "Double support", daily: "double_support", smoothed: "double_support_7d", baselineDays: 30,
                             displayUnit: DisplayUnit(symbol: "%", factor: 1), lowerIsBetter: true),  // published in % (28 = 28 %)
        sixMinuteWalk: .init(clinic: "six_minute_walk_clinic", watch: "six_minute_walk_watch", provisionalRule: "uncalibrated_6mwd",
                             displayUnit: DisplayUnit(symbol: "m", factor: 1)),
        explanations: ["gait_quality_explains_slowdown"])

    /// The history of shipped scenario `name` (e.g. `jamie-plateau`).
    static func load(_ name: String) throws -> (UserHistory, Scenario) {
        let scenario = try Scenario.load(RepoPaths.root + "/simulator/scenarios/\(name).scenario")
        let program = try #require(Checker.check(RuleSet.load([RepoPaths.rules]).sources).program)
        var ingestor = Ingestor(engine: Engine(program: program, configuration: EngineConfiguration()), clock: .event)
        var out: [EngineOutput] = []
        for r in ScenarioVerifier.traffic([scenario]) { ingestor.handle(topic: r.topic, payload: r.payload, now: Timestamp(milliseconds: 0), into: &out) }
        ingestor.closeOpenDays(into: &out)
        var h = UserHistory(user: scenario.persona.user)
        var open: [String: Int] = [:]
        for o in out {
            switch o {
            case .series(let p):
                h.series[p.name, default: [:]][p.day.dayNumber] = .some(p.value)
                h.units[p.name] = p.unit
            case .alert(let a) where !a.isRepeat:
                if a.status == .firing {
                    open[a.id] = h.alerts.count
                    h.alerts.append(AlertEpisode(id: a.id, rule: a.rule, severity: a.severity, firedDay: a.day.dayNumber, resolvedDay: nil,
                                                 summary: a.summary, labels: Dictionary(a.labels, uniquingKeysWith: { $1 })))
                } else if let i = open.removeValue(forKey: a.id) {
                    h.alerts[i].resolvedDay = a.day.dayNumber  // the firing summary is kept: a resolved one reads "unknown"
                }
            default:
                break
            }
        }
        let t = scenario.timeline, day0 = t.start.dayNumber - 1
        if let d = t.injuryDay {
            h.timeline.append(TimelineEvent(id: "injury-\(h.user)", category: .clinical, kind: "injury", firstDay: day0 + DayNumber(d), lastDay: day0 + DayNumber(d)))
        }
        if let hw = t.heatWave {
            h.timeline.append(TimelineEvent(id: "heat-\(h.user)", category: .annotation, kind: "heat_wave", firstDay: day0 + DayNumber(hw.lowerBound),
                                            lastDay: day0 + DayNumber(hw.upperBound)))
        }
        return (h, scenario)
    }
}
