import Foundation
import MobilityModel
import RuleLanguage

/// A parsed rule-test file (`*.test`). See `docs/rule-language.md`, "Rule tests".
package struct RuleTestFile: Sendable {
    /// The file's path.
    package var path: String
    /// Rule files or directories to load, resolved against the test file's directory.
    package var rulePaths: [String]
    /// The line that named each rule path (0 for the default).
    package var rulePathLines: [Int] = []
    /// The test cases.
    package var cases: [RuleTestCase]
}

/// One `test "…" { … }` case.
package struct RuleTestCase: Sendable {
    /// The quoted name after `test`, shown in PASS/FAIL lines.
    package var name: String
    /// The 1-based line of the `test` statement in the file.
    package var line: Int
    /// The IANA time zone of the simulated user (`time_zone`; default UTC).
    package var timeZone = "UTC"
    /// The civil date of day 1 (`start`; default 2026-01-01).
    package var start = CivilDate(year: 2026, month: 1, day: 1)
    /// Samples generated per `input` value, spread over 09:00–18:00 (`samples_per_day`, 1–100; default 5).
    package var samplesPerDay = 5
    /// The last day to replay (`until day N`); nil replays to the last day with input.
    package var until: Int?
    /// The `input` lines, in file order.
    package var inputs: [Input] = []
    /// The single `sample` lines, in file order.
    package var samples: [SampleLine] = []
    /// Clinical events and annotations (`event`, `annotation`), already placed on absolute day numbers.
    package var events: [TimelineEvent] = []
    /// The `expect` lines, checked in file order.
    package var expectations: [Expectation] = []

    /// `input METRIC UNIT [user_entered] [from day N]: values`: one value per day, expanded into samples.
    package struct Input: Sendable {
        /// The metric the values are samples of.
        package var metric: MetricKind
        /// The unit the values are written in (a unit of the metric's dimension).
        package var unit: MeasureUnit
        /// Device or user-entered (`user_entered`); decides the generated samples' source bundle.
        package var provenance: Provenance
        /// The day of the first value (`from day N`; default 1).
        package var firstDay: Int
        /// Per day: a value or nil (missing).
        package var values: [Double?]
    }

    /// `sample day N [HH:MM] METRIC VALUE UNIT [user_entered] [calibrated=BOOL]`.
    package struct SampleLine: Sendable {
        /// The day the sample ends on, counted from the case's start (day 1).
        package var day: Int
        /// The local time of the sample's end, in minutes after midnight (default 12:00).
        package var minuteOfDay: Int
        /// The metric the sample measures.
        package var metric: MetricKind
        /// The sample's value, in `unit`.
        package var value: Double
        /// The unit `value` is written in.
        package var unit: MeasureUnit
        /// Device or user-entered (`user_entered`).
        package var provenance: Provenance
        /// The `calibrated=` flag (Apple's device-calibrated metadata), or nil when not given.
        package var calibrated: Bool?
    }

    /// What a case expects.
    package enum Expectation: Sendable {
        /// The exact sequence of transitions of a rule: (status word, day).
        case transitions(rule: String, [(String, Int)], line: Int)
        /// A series value on a day (in `unit`), or missing when `value` is nil.
        case series(name: String, day: Int, value: Double?, unit: MeasureUnit, tolerance: Double, line: Int)
        /// The headline (or the details) of the transition of a rule on a day contains a text.
        case text(rule: String, headline: Bool, day: Int, contains: String, line: Int)
    }
}

/// A problem in a test file, with its position.
package struct RuleTestError: Error, Sendable, CustomStringConvertible {
    /// The test file the problem is in.
    package var path: String
    /// The 1-based line of the problem (for an unclosed case, the line of its `test`).
    package var line: Int
    /// What is wrong: lower case, no trailing period.
    package var message: String
    /// `path:line: error: message`, as printed by `mobilityctl test`.
    package var description: String { "\(path):\(line): error: \(message)" }
}

extension RuleTestFile {
    /// Parses a test file; collects every error.
    package static func parse(path: String, text: String) -> (RuleTestFile, [RuleTestError]) {
        var file = RuleTestFile(path: path, rulePaths: [], cases: [])
        var errors: [RuleTestError] = []
        let dir = (path as NSString).deletingLastPathComponent
        var current: RuleTestCase?
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let n = i + 1
            var line = Substring(raw)
            if let hash = line.firstIndex(of: "#"), !line[..<hash].contains("\"") || line[..<hash].filter({ $0 == "\"" }).count % 2 == 0 {
                line = line[..<hash]
            }
            line = Substring(line.trimmingCharacters(in: .whitespaces))
            if line.isEmpty { continue }
            func err(_ m: String) { errors.append(RuleTestError(path: path, line: n, message: m)) }
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            if current == nil {
                switch words[0] {
                case "rules":
                    let named = words.dropFirst().map { ($0.hasPrefix("/") ? String($0) : (dir as NSString).appendingPathComponent(String($0))) }
                    file.rulePaths += named
                    file.rulePathLines += named.map { _ in n }
                case "test":
                    guard let q1 = line.firstIndex(of: "\""), let q2 = line[line.index(after: q1)...].firstIndex(of: "\""),
                        line.hasSuffix("{")
                    else { err("expected 'test \"name\" {'"); continue }
                    current = RuleTestCase(name: String(line[line.index(after: q1)..<q2]), line: n)
                default: err("expected 'rules' or 'test', found '\(words[0])'")
                }
                continue
            }
            if line == "}" { file.cases.append(current!); current = nil; continue }
            do {
                try parseCaseLine(words.map(String.init), line: String(line), n: n, into: &current!)
            } catch let e as LineError {
                err(e.message)
            } catch {}
        }
        if let c = current { errors.append(RuleTestError(path: path, line: c.line, message: "test \"\(c.name)\" is not closed with '}'")) }
        if file.rulePaths.isEmpty {
            file.rulePaths = [(dir as NSString).deletingLastPathComponent.isEmpty ? "." : (dir as NSString).deletingLastPathComponent]
            file.rulePathLines = [0]
        }
        return (file, errors)
    }

    struct LineError: Error { var message: String }

    static func int(_ s: String, _ what: String) throws -> Int {
        guard let v = Int(s) else { throw LineError(message: "expected \(what), found '\(s)'") }
        return v
    }

    static func metric(_ s: String) throws -> MetricKind {
        guard let m = MetricKind(identifier: s) else { throw LineError(message: "unknown metric '\(s)'") }
        return m
    }

    static func unit(_ s: String, for m: MetricKind?) throws -> MeasureUnit {
        guard let u = MeasureUnit.rule(s) else { throw LineError(message: "unknown unit '\(s)'") }
        if let m, u.dimension != m.dimension { throw LineError(message: "unit '\(s)' is not a unit of \(m.dimension) as \(m.name) needs") }
        return u
    }

    /// Expands `1.3x30 0.7+0.01x20 _x3 1.2` into per-day values: `vxN` repeats v N times,
    /// `a+bxN` (or `a-bxN`) is N values from a in steps of b, `_` is a missing day.
    package static func expand(_ tokens: [String]) throws -> [Double?] {
        var out: [Double?] = []
        for t in tokens {
            var body = Substring(t), count = 1
            if let x = t.lastIndex(of: "x") {
                guard let c = Int(t[t.index(after: x)...]), c >= 1 else { throw LineError(message: "invalid repeat in '\(t)'") }
                count = c
                body = t[..<x]
            }
            if body == "_" { out += Array(repeating: nil, count: count); continue }
            var start = body, step = 0.0
            if let op = body.dropFirst().firstIndex(where: { $0 == "+" || $0 == "-" }) {
                start = body[..<op]
                guard let s = Double(body[op...]) else { throw LineError(message: "invalid step in '\(t)'") }
                step = s
            }
            guard let a = Double(start) else { throw LineError(message: "invalid value '\(t)'") }
            for k in 0..<count { out.append(a + Double(k) * step) }
        }
        return out
    }

    static func parseCaseLine(_ w: [String], line: String, n: Int, into c: inout RuleTestCase) throws {
        switch w[0] {
        case "time_zone":
            guard w.count == 2, LocalCalendar.cached(w[1]) != nil else { throw LineError(message: "expected an IANA time zone after 'time_zone'") }
            c.timeZone = w[1]
        case "start":
            guard w.count == 2, let d = CivilDate(parsing: Substring(w[1])) else { throw LineError(message: "expected a date YYYY-MM-DD after 'start'") }
            c.start = d
        case "samples_per_day":
            guard w.count == 2, let k = Int(w[1]), (1...100).contains(k) else { throw LineError(message: "expected 1–100 after 'samples_per_day'") }
            c.samplesPerDay = k
        case "until":
            guard w.count == 3, w[1] == "day" else { throw LineError(message: "expected 'until day N'") }
            c.until = try int(w[2], "a day number")
        case "event", "annotation":
            // event KIND day N | annotation KIND day N [to M]
            guard w.count >= 4, w[2] == "day" else { throw LineError(message: "expected '\(w[0]) KIND day N\(w[0] == "annotation" ? " [to M]" : "")'") }
            let first = try int(w[3], "a day number")
            var last = first
            if w.count == 6, w[4] == "to" {
                last = try int(w[5], "a day number")
            } else if w.count != 4 {
                throw LineError(message: "unexpected '\(w[4...].joined(separator: " "))'")
            }
            let base = c.start.dayNumber - 1
            c.events.append(
                TimelineEvent(
                    id: "\(w[0])-\(c.events.count)", category: w[0] == "event" ? .clinical : .annotation, kind: w[1],
                    firstDay: base + DayNumber(first), lastDay: base + DayNumber(last)))
        case "input":
            guard let colon = line.firstIndex(of: ":") else { throw LineError(message: "expected ':' before the values of 'input'") }
            let head = line[..<colon].split(separator: " ").map(String.init)
            guard head.count >= 3 else { throw LineError(message: "expected 'input METRIC UNIT [user_entered] [from day N]: values'") }
            let m = try metric(head[1])
            let u = try unit(head[2], for: m)
            var prov = Provenance.device, first = 1
            var k = 3
            while k < head.count {
                if head[k] == "user_entered" {
                    prov = .userEntered; k += 1
                } else if head[k] == "from", k + 2 < head.count, head[k + 1] == "day" {
                    first = try int(head[k + 2], "a day number"); k += 3
                } else {
                    throw LineError(message: "unexpected '\(head[k])' in 'input'")
                }
            }
            let values = try expand(line[line.index(after: colon)...].split(separator: " ").map(String.init))
            // Two lines giving the same metric and source a value on one day would generate samples
            // with the same ids, and the engine keeps the first of a re-sent id: refuse it here.
            for earlier in c.inputs where earlier.metric == m && earlier.provenance == prov {
                for (k, v) in values.enumerated() where v != nil {
                    let i = first + k - earlier.firstDay
                    guard earlier.values.indices.contains(i), earlier.values[i] != nil else { continue }
                    throw LineError(
                        message:
                            "an earlier 'input \(head[1])' already gives day \(first + k) a value: one 'input' line a metric and source a day ('_' for days another line gives), or 'sample' lines"
                    )
                }
            }
            c.inputs.append(.init(metric: m, unit: u, provenance: prov, firstDay: first, values: values))
        case "sample":
            guard w.count >= 6, w[1] == "day" else {
                throw LineError(message: "expected 'sample day N [HH:MM] METRIC VALUE UNIT [user_entered] [calibrated=true|false]'")
            }
            let day = try int(w[2], "a day number")
            var k = 3, minute = 12 * 60
            if w[k].contains(":") {
                let hm = w[k].split(separator: ":")
                guard hm.count == 2, let h = Int(hm[0]), let mm = Int(hm[1]), h < 24, mm < 60 else { throw LineError(message: "invalid time '\(w[k])'") }
                minute = h * 60 + mm
                k += 1
            }
            guard k + 2 < w.count || k + 2 == w.count - 0 else { throw LineError(message: "expected METRIC VALUE UNIT") }
            let m = try metric(w[k])
            guard k + 2 < w.count + 0, let v = Double(w[k + 1]) else { throw LineError(message: "expected a value after \(w[k])") }
            let u = try unit(w[k + 2], for: m)
            var s = RuleTestCase.SampleLine(day: day, minuteOfDay: minute, metric: m, value: v, unit: u, provenance: .device, calibrated: nil)
            for extra in w[(k + 3)...] {
                switch extra {
                case "user_entered": s.provenance = .userEntered
                case "calibrated=true": s.calibrated = true
                case "calibrated=false": s.calibrated = false
                default: throw LineError(message: "unexpected '\(extra)' in 'sample'")
                }
            }
            c.samples.append(s)
        case "expect":
            guard w.count >= 3 else {
                throw LineError(message: "expected 'expect RULE none', 'expect RULE firing day N, …' or 'expect series NAME day N = V UNIT'")
            }
            if w[1] == "series" {
                // expect series NAME day N = V UNIT [+- T] | expect series NAME day N missing
                guard w.count >= 5, w[3] == "day" else { throw LineError(message: "expected 'expect series NAME day N = VALUE UNIT [+- TOL]'") }
                let day = try int(w[4], "a day number")
                if w.count == 6, w[5] == "missing" {
                    c.expectations.append(.series(name: w[2], day: day, value: nil, unit: .one, tolerance: 0, line: n))
                    return
                }
                guard w.count >= 8, w[5] == "=", let v = Double(w[6]) else { throw LineError(message: "expected '= VALUE UNIT' or 'missing'") }
                let u = try unit(w[7], for: nil)
                var tol = 1e-9
                if w.count == 10, w[8] == "+-", let t = Double(w[9]) { tol = t } else if w.count != 8 { throw LineError(message: "expected '+- TOLERANCE'") }
                c.expectations.append(.series(name: w[2], day: day, value: v, unit: u, tolerance: tol, line: n))
            } else if ["headline", "details", "summary"].contains(w[2]) {
                // expect RULE headline|details day N contains "text" (`summary`: the former name of details)
                guard w.count >= 6, w[3] == "day", w[5] == "contains", let q1 = line.firstIndex(of: "\""), let q2 = line.lastIndex(of: "\""), q1 < q2 else {
                    throw LineError(message: "expected 'expect RULE \(w[2]) day N contains \"text\"'")
                }
                c.expectations.append(
                    .text(
                        rule: w[1], headline: w[2] == "headline", day: try int(w[4], "a day number"), contains: String(line[line.index(after: q1)..<q2]),
                        line: n))
            } else if w.count == 3, w[2] == "none" {
                c.expectations.append(.transitions(rule: w[1], [], line: n))
            } else {
                let rest = w[2...].joined(separator: " ").split(separator: ",")
                var list: [(String, Int)] = []
                for item in rest {
                    let p = item.split(separator: " ")
                    guard p.count == 3, ["firing", "resolved", "expired", "repeat"].contains(p[0]), p[1] == "day" else {
                        throw LineError(
                            message:
                                "expected 'firing day N', 'repeat day N', 'resolved day N' or 'expired day N', found '\(item.trimmingCharacters(in: .whitespaces))'"
                        )
                    }
                    list.append((String(p[0]), try int(String(p[2]), "a day number")))
                }
                c.expectations.append(.transitions(rule: w[1], list, line: n))
            }
        default:
            throw LineError(
                message: "unknown statement '\(w[0])'; expected time_zone, start, samples_per_day, input, sample, event, annotation, until or expect")
        }
    }
}
