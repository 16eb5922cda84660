import Foundation
import MobilityModel
import MobilityWire

/// A scenario file (`simulator/scenarios/*.scenario`): a persona, a timeline and the alerts a
/// clinician expects. See `simulator/scenarios/README.md`.
package struct Scenario: Sendable {
    /// The scenario file's path, for error messages.
    package var path: String
    /// The quoted title of the `scenario` line (default: the file name without extension).
    package var title: String
    /// The simulated person: user, time zone, baseline gait and recording habits.
    package var persona: Persona
    /// What happens to the person day by day: injury, recovery, gaps, travel, ….
    package var timeline: Timeline
    /// The traffic generator's random seed (`seed`; default 1): the same seed gives the same traffic.
    package var seed: UInt64 = 1
    /// Days whose first walking-speed sample is retracted (a deletion published the next morning).
    package var deletions: [Int] = []
    /// The `expect` lines, checked in file order.
    package var expectations: [Expectation] = []

    /// An expected alert outcome.
    package struct Expectation: Sendable, CustomStringConvertible {
        /// The name of the alert rule expected.
        package var rule: String
        /// `firing`, `resolved` or `expired`; nil means "no transition of this rule at all".
        package var status: String?
        /// The days (1-based) the transition is expected on, any one of them satisfying it; unused when `status` is nil.
        package var days: ClosedRange<Int>
        /// The 1-based line of the `expect` statement.
        package var line: Int

        /// The expectation as written, e.g. `stalled_recovery firing day 60..65` or `no data_gap`.
        package var description: String {
            guard let status else { return "no \(rule)" }
            return "\(rule) \(status) day \(days.lowerBound)\(days.count > 1 ? "..\(days.upperBound)" : "")"
        }
    }

    /// The traffic generator for this scenario.
    package var generator: TrafficGenerator {
        var g = TrafficGenerator(persona: persona, timeline: timeline, seed: seed)
        g.deletions = deletions
        return g
    }

    /// The day number (1-based) of a civil date in this scenario.
    package func dayIndex(_ date: CivilDate) -> Int { Int(date.dayNumber - timeline.start.dayNumber) + 1 }
}

/// A scenario file error with its line.
package struct ScenarioError: Error, CustomStringConvertible, Sendable {
    /// The scenario file the error is in.
    package var path: String
    /// The 1-based line of the error (0 when the file cannot be read).
    package var line: Int
    /// What is wrong: lower case, no trailing period.
    package var message: String
    /// `path:line: error: message`, as `mobility-sim verify` prints it.
    package var description: String { "\(path):\(line): error: \(message)" }
}

extension Scenario {
    /// Loads a scenario file.
    package static func load(_ path: String) throws(ScenarioError) -> Scenario {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw ScenarioError(path: path, line: 0, message: "cannot read") }
        return try parse(path: path, text: text)
    }

    /// Parses scenario text.
    package static func parse(path: String, text: String) throws(ScenarioError) -> Scenario {
        let name = ((path as NSString).lastPathComponent as NSString).deletingPathExtension
        var s = Scenario(path: path, title: name, persona: Persona(user: name), timeline: Timeline())
        s.timeline.sixMinuteWalkWeekday = 3
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let n = i + 1
            var line = String(raw)
            if let h = line.firstIndex(of: "#"), !line.hasPrefix("scenario") { line = String(line[..<h]) }
            line = line.trimmingCharacters(in: .whitespaces)
            if line.isEmpty { continue }
            let w = line.split(separator: " ").map(String.init)
            func fail(_ m: String) -> ScenarioError { ScenarioError(path: path, line: n, message: m) }
            func int(_ k: Int) throws(ScenarioError) -> Int {
                guard k < w.count, let v = Int(w[k]) else { throw fail("expected a whole number after '\(w[max(0, k - 1)])'") }
                return v
            }
            func quantity(_ k: Int, _ dim: PhysicalDimension) throws(ScenarioError) -> Double {
                guard k + 1 < w.count, let v = Double(w[k]), let u = MeasureUnit.rule(w[k + 1]) else {
                    throw fail("expected a value and a unit after '\(w[max(0, k - 1)])'")
                }
                guard u.dimension == dim else { throw fail("'\(w[k + 1])' is not a unit of \(dim)") }
                return u.si(v)
            }
            func dayRange(_ k: Int) throws(ScenarioError) -> ClosedRange<Int> {
                guard k < w.count, w[k] == "day" else { throw fail("expected 'day N' or 'day A to B'") }
                let a = try int(k + 1)
                if k + 3 < w.count, w[k + 2] == "to" { let b = try int(k + 3); guard b >= a else { throw fail("range ends before it starts") }; return a...b }
                return a...a
            }
            switch w[0] {
            case "scenario":
                guard let q1 = line.firstIndex(of: "\""), let q2 = line.lastIndex(of: "\""), q1 < q2 else { throw fail("expected scenario \"title\"") }
                s.title = String(line[line.index(after: q1)..<q2])
            case "user":
                guard w.count == 2, TopicLayout.isValidUser(w[1]) else { throw fail("expected a user id of A-Z a-z 0-9 _ -") }
                s.persona.user = w[1]
            case "seed": s.seed = UInt64(try int(1))
            case "time_zone":
                guard w.count == 2, LocalCalendar.cached(w[1]) != nil else { throw fail("expected an IANA time zone") }
                s.persona.timeZone = w[1]
            case "start":
                guard w.count == 2, let d = CivilDate(parsing: Substring(w[1])) else { throw fail("expected a date YYYY-MM-DD") }
                s.timeline.start = d
            case "days": s.timeline.days = try int(1)
            case "walking_speed": s.persona.walkingSpeed = try quantity(1, .speed)
            case "double_support": s.persona.doubleSupport = try quantity(1, .dimensionless)
            case "asymmetry": s.persona.asymmetry = try quantity(1, .dimensionless)
            case "step_length": s.persona.stepLength = try quantity(1, .length)
            case "six_minute_walk": s.persona.sixMinuteWalk = try quantity(1, .length)
            case "samples_per_day":
                let a = try int(1)
                guard w.count == 4, w[2] == "to" else { throw fail("expected 'samples_per_day A to B'") }
                let b = try int(3)
                guard a >= 1, b >= a else { throw fail("expected 1 <= A <= B") }
                s.persona.samplesPerDay = a...b
            case "speed_noise": s.persona.speedNoise = try quantity(1, .speed)
            case "imperial_share": s.persona.imperialShare = try quantity(1, .dimensionless)
            case "injury":
                s.timeline.injuryDay = try dayRange(1).lowerBound
                if w.count > 3 {
                    guard w[3] == "entered", w.count == 6 else { throw fail("expected 'injury day N' or 'injury day N entered day M'") }
                    let entered = try dayRange(4).lowerBound
                    guard entered >= s.timeline.injuryDay! else { throw fail("an injury cannot be entered before it happens") }
                    s.timeline.injuryEnteredDay = entered
                }
            case "drop": s.timeline.dropFactor = 1 - (try quantity(1, .dimensionless))
            case "recovery": s.timeline.recoveryPerDay = try quantity(1, .speed / .time) * 86_400
            case "plateau": s.timeline.plateauDay = try dayRange(1).lowerBound
            case "double_support_after_injury":
                s.timeline.injuredDoubleSupport = try quantity(1, .dimensionless)
                if w.count >= 6, w[3] == "change" { s.timeline.doubleSupportPerDay = try quantity(4, .dimensionless / .time) * 86_400 }
            case "double_support_regression":
                s.timeline.doubleSupportRegressionDay = try dayRange(1).lowerBound
                if w.count >= 6, w[3] == "rate" { s.timeline.regressionPerDay = try quantity(4, .dimensionless / .time) * 86_400 }
            case "heat_wave":
                let r = try dayRange(1)
                s.timeline.heatWave = r
                if let f = w.firstIndex(of: "factor") { s.timeline.heatWaveFactor = try quantity(f + 1, .dimensionless) }
            case "missing": s.timeline.missing.append(try dayRange(1))
            case "offline": s.timeline.offline = try dayRange(1)
            case "travel":
                let r = try dayRange(1)
                guard let zone = w.last, LocalCalendar.cached(zone) != nil else { throw fail("expected an IANA zone after the days") }
                s.timeline.travel.append((r, zone))
            case "six_minute_walk_weekday":
                if w.count == 2, w[1] == "none" { s.timeline.sixMinuteWalkWeekday = nil } else { s.timeline.sixMinuteWalkWeekday = try int(1) % 7 }
            case "uncalibrated_until": s.timeline.uncalibratedUntil = try dayRange(1).lowerBound
            case "clinic_test": s.timeline.clinicTests.append((try dayRange(1).lowerBound, try quantity(3, .length)))
            case "delete": s.deletions.append(try dayRange(1).lowerBound)
            case "expect":
                if w.count == 3, w[1] == "no" {
                    s.expectations.append(Expectation(rule: w[2], status: nil, days: 0...0, line: n))
                } else {
                    guard w.count >= 5, ["firing", "resolved", "expired"].contains(w[2]) else {
                        throw fail("expected 'expect RULE firing|resolved|expired day A [to B]' or 'expect no RULE'")
                    }
                    s.expectations.append(Expectation(rule: w[1], status: w[2], days: try dayRange(3), line: n))
                }
            default:
                throw fail("unknown statement '\(w[0])'")
            }
        }
        return s
    }
}
