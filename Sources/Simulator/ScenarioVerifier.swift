import Ingest
import MobilityModel
import RuleEngine
import RuleLanguage

/// Compares the alert transitions a run produced with the scenarios' expectations.
package struct ScenarioVerifier: Sendable {
    /// The scenarios checked, in report order.
    package let scenarios: [Scenario]

    package init(scenarios: [Scenario]) { self.scenarios = scenarios }

    /// One scenario's outcome.
    package struct Result: Sendable {
        /// The scenario checked.
        package var scenario: Scenario
        /// One report line per expectation (`ok`/`FAIL`), then unexpected transitions and a `note` of unchecked ones.
        package var lines: [String]
        /// Whether every expectation held and no expected rule fired on a day no expectation matched.
        package var passed: Bool
    }

    /// Merges the scenarios' traffic in publish order.
    package static func traffic(_ scenarios: [Scenario]) -> [TrafficRecord] {
        var timed: [TrafficGenerator.Timed] = []
        for s in scenarios { timed += s.generator.generate() }
        return timed.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element.record)
    }

    /// Runs the traffic through an in-process engine in event time (what `mobilityctl replay` does).
    package static func replay(_ records: [TrafficRecord], program: Program, configuration: EngineConfiguration = EngineConfiguration()) -> [AlertTransition] {
        var ing = Ingestor(engine: Engine(program: program, configuration: configuration), clock: .event)
        var out: [EngineOutput] = []
        for r in records { ing.handle(topic: r.topic, payload: r.payload, now: Timestamp(milliseconds: 0), into: &out) }
        return out.compactMap { if case .alert(let a) = $0 { return a } else { return nil } }
    }

    /// Checks transitions against every scenario.
    package func verify(_ transitions: [AlertTransition]) -> [Result] {
        scenarios.map { s in
            let mine = transitions.filter { $0.user == s.persona.user && !$0.isRepeat }
            var lines: [String] = []
            var ok = true
            var matched = Set<Int>()
            func show(_ t: AlertTransition) -> String { "\(t.rule) \(t.status.rawValue) day \(s.dayIndex(t.day)) (\(t.day))" }
            for e in s.expectations {
                if let status = e.status {
                    if let (i, t) = mine.enumerated().first(where: {
                        !matched.contains($0.offset) && $0.element.rule == e.rule
                            && $0.element.status.rawValue == status && e.days.contains(s.dayIndex($0.element.day))
                    }) {
                        matched.insert(i)
                        lines.append("  ok    \(e): \(show(t))")
                    } else {
                        ok = false
                        let got = mine.filter { $0.rule == e.rule }.map(show)
                        lines.append("  FAIL  \(e): got \(got.isEmpty ? "no \(e.rule) transitions" : got.joined(separator: ", "))")
                    }
                } else {
                    let got = mine.filter { $0.rule == e.rule }
                    if got.isEmpty {
                        lines.append("  ok    \(e)")
                    } else {
                        ok = false
                        lines.append("  FAIL  \(e): got \(got.map(show).joined(separator: ", "))")
                    }
                }
            }
            let checked = Set(s.expectations.map(\.rule))
            // Strict for the rules it names: a firing, resolution or expiry no expectation matched
            // fails (a false "resolved" is as wrong as a false alarm).
            for (i, t) in mine.enumerated() where !matched.contains(i) && checked.contains(t.rule) {
                ok = false
                lines.append("  FAIL  unexpected \(show(t))")
            }
            let others = mine.filter { !checked.contains($0.rule) }
            if !others.isEmpty { lines.append("  note  not checked: " + others.map(show).joined(separator: ", ")) }
            return Result(scenario: s, lines: lines, passed: ok)
        }
    }

    /// A readable report ending with `N passed, N failed`.
    package static func report(_ results: [Result]) -> String {
        var out = ""
        for r in results {
            out += "\(r.passed ? "PASS" : "FAIL") \(r.scenario.path) \"\(r.scenario.title)\" (user \(r.scenario.persona.user))\n"
            out += r.lines.map { $0 + "\n" }.joined()
        }
        let p = results.filter(\.passed).count
        return out + "\(p) passed, \(results.count - p) failed\n"
    }
}
