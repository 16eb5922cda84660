import Foundation
import MobilityModel
import RuleEngine
import RuleLanguage

/// The outcome of running rule tests.
package struct RuleTestReport: Sendable {
    /// Human-readable report, ending with `N passed, N failed`.
    package var text: String
    /// The number of cases whose expectations all held.
    package var passed: Int
    /// The number of cases with at least one failed expectation.
    package var failed: Int
    /// True when every test passed and every file parsed.
    package var ok: Bool
}

/// Runs rule tests: each case is replayed day by day through a real engine in event time.
package enum RuleTestRunner {
    /// Finds `*.test` files under the paths (directories are searched recursively) and runs them.
    /// - Parameter rulesRoots: directories whose rule files any test may load, besides its own
    ///   tree (``allowedRoot(forTestAt:)``).
    package static func run(paths: [String], rulesRoots: [String] = []) -> RuleTestReport {
        var files: [String] = []
        var text = ""
        var failed = 0, passed = 0, broken = false
        let fm = FileManager.default
        for p in paths {
            var isDir: ObjCBool = false
            guard fm.fileExists(atPath: p, isDirectory: &isDir) else { text += "\(p): no such file or directory\n"; broken = true; continue }
            if isDir.boolValue {
                let found = (fm.enumerator(atPath: p)?.compactMap { $0 as? String } ?? []).filter { $0.hasSuffix(".test") }.sorted()
                files += found.map { (p as NSString).appendingPathComponent($0) }
            } else {
                files.append(p)
            }
        }
        if files.isEmpty { text += "no .test files found\n"; broken = true }
        for f in files {
            guard let data = fm.contents(atPath: f), let src = String(data: data, encoding: .utf8) else {
                text += "\(f): cannot read\n"; broken = true; continue
            }
            let r = run(path: f, text: src, rulesRoots: rulesRoots)
            text += r.text
            passed += r.passed
            failed += r.failed
            if !r.ok && r.failed == 0 { broken = true }
        }
        text += "\(passed) passed, \(failed) failed\n"
        return RuleTestReport(text: text, passed: passed, failed: failed, ok: failed == 0 && !broken)
    }

    /// The tree a test file's rule paths must stay in: the directory above the test file's
    /// directory (`rules/` for `rules/tests/x.test`, where the default `rules ..` points).
    package static func allowedRoot(forTestAt path: String) -> String {
        let dir = ((path as NSString).deletingLastPathComponent as NSString)
        let own = dir.length == 0 ? "." : dir as String
        let parent = realPath(own + "/..") ?? own + "/.."
        // Never the whole file system: a test directly under `/` keeps to its own directory.
        return parent == "/" ? (realPath(own) ?? own) : parent
    }

    /// A path with symbolic links, `.` and `..` resolved; nil when it does not exist.
    static func realPath(_ p: String) -> String? {
        guard let r = realpath(p, nil) else { return nil }
        defer { free(r) }
        return String(cString: r)
    }

    /// Whether a path, resolved, lies in one of the roots (resolved).
    static func isInside(_ path: String, _ roots: [String]) -> Bool {
        guard let p = realPath(path) else { return true }  // a missing path is reported by the loader
        return roots.contains { root in
            guard let r = realPath(root) else { return false }
            return p == r || p.hasPrefix(r == "/" ? "/" : r + "/")
        }
    }

    /// Runs one test file's text.
    package static func run(path: String, text src: String, rulesRoots: [String] = []) -> RuleTestReport {
        var (file, errors) = RuleTestFile.parse(path: path, text: src)
        // A test names rule files to load; one outside its tree (`rules /etc/passwd`, or a link
        // pointing out) is refused unread, so no diagnostic can show another file's lines.
        let roots = [allowedRoot(forTestAt: path)] + rulesRoots
        for (p, line) in zip(file.rulePaths, file.rulePathLines) where !isInside(p, roots) {
            errors.append(
                RuleTestError(
                    path: path, line: line,
                    message: "rule path '\(p)' is outside the test's tree \(roots[0]); allow it with --rules-root DIR"))
        }
        guard errors.isEmpty else {
            return RuleTestReport(text: errors.map { "\($0)\n" }.joined(), passed: 0, failed: 0, ok: false)
        }
        let (sources, loadErrors) = RuleSet.load(file.rulePaths)
        let (program, diagnostics) = Checker.check(sources)
        guard loadErrors.isEmpty, let program else {
            return RuleTestReport(
                text: "\(path): the rules under test do not check:\n" + loadErrors.map { "  \($0)\n" }.joined()
                    + DiagnosticRenderer(files: sources).render(diagnostics), passed: 0, failed: 0, ok: false)
        }
        var out = "", passed = 0, failed = 0
        for c in file.cases {
            let failures = run(c, program: program)
            if failures.isEmpty {
                passed += 1
                out += "PASS \(path):\(c.line) \"\(c.name)\"\n"
            } else {
                failed += 1
                out += "FAIL \(path):\(c.line) \"\(c.name)\"\n" + failures.map { "  " + $0.replacingOccurrences(of: "\n", with: "\n  ") + "\n" }.joined()
            }
        }
        return RuleTestReport(text: out, passed: passed, failed: failed, ok: failed == 0)
    }

    /// The transitions and series a case produced, by day number relative to its start (day 1).
    package struct Outcome: Sendable {
        /// Every alert transition published, in order: rule, status word (`firing`, `repeat`,
        /// `resolved`, `expired`), day, headline and details.
        package var transitions: [(rule: String, status: String, day: Int, headline: String, details: String)] = []
        /// Series values by series name, then day; in SI units, nil for a day published as missing.
        package var series: [String: [Int: Double?]] = [:]
    }

    /// Replays a case day by day and returns what the engine published.
    package static func simulate(_ c: RuleTestCase, program: Program) -> Outcome {
        guard let cal = LocalCalendar.cached(c.timeZone) else { return Outcome() }
        var config = EngineConfiguration()
        config.defaultCalendar = cal
        var engine = Engine(program: program, configuration: config)
        let user = "test"
        let base = c.start.dayNumber - 1
        var samples: [Sample] = []
        for input in c.inputs {
            for (k, v) in input.values.enumerated() {
                guard let v else { continue }
                let day = base + DayNumber(input.firstDay + k)
                let start = cal.startOfDay(day)
                for j in 0..<c.samplesPerDay {
                    let minute = 9 * 60 + j * (9 * 60 / max(c.samplesPerDay, 1))
                    let end = start.adding(seconds: Int64(minute * 60))
                    samples.append(
                        Sample(
                            id: "\(input.metric.name)-\(input.provenance)-\(day)-\(j)", metric: input.metric,
                            value: input.unit.si(v), start: end.adding(seconds: -60), end: end,
                            utcOffset: Int32(cal.offset(at: end)), provenance: input.provenance,
                            bundleId: input.provenance == .device ? "com.apple.health.test" : "org.example.clinic"))
                }
            }
        }
        for (k, s) in c.samples.enumerated() {
            let day = base + DayNumber(s.day)
            let end = cal.startOfDay(day).adding(seconds: Int64(s.minuteOfDay * 60))
            var md: [String: MetadataValue] = [:]
            if let cb = s.calibrated { md[MetadataKey.appleDeviceCalibrated] = .bool(cb) }
            if s.provenance == .userEntered { md[MetadataKey.wasUserEntered] = .bool(true) }
            samples.append(
                Sample(
                    id: "sample-\(k)", metric: s.metric, value: s.unit.si(s.value), start: end, end: end,
                    utcOffset: Int32(cal.offset(at: end)), provenance: s.provenance,
                    bundleId: s.provenance == .device ? "com.apple.health.test" : "org.example.clinic",
                    calibrated: s.calibrated, metadata: md))
        }
        samples.sort { ($0.end, $0.id) < ($1.end, $1.id) }
        for e in c.events { engine.record(event: e, user: user) }
        let lastInputDay = max(c.inputs.map { $0.firstDay + $0.values.count - 1 }.max() ?? 1, c.samples.map(\.day).max() ?? 1)
        let until = c.until ?? lastInputDay
        var outcome = Outcome()
        var next = 0
        for day in 1...max(until, 1) {
            var out: [EngineOutput] = []
            let d = base + DayNumber(day)
            while next < samples.count, samples[next].localDay(default: cal) <= d {
                engine.ingest(samples[next], user: user, now: samples[next].end, into: &out)
                next += 1
            }
            engine.advance(to: cal.startOfDay(d + 1).adding(seconds: config.graceSeconds), into: &out)
            for o in out {
                switch o {
                case .alert(let a):
                    outcome.transitions.append((a.rule, a.isRepeat ? "repeat" : a.status.rawValue, Int(a.day.dayNumber - base), a.headline, a.details))
                case .series(let s):
                    outcome.series[s.name, default: [:]][Int(s.day.dayNumber - base)] = s.value.map { v in
                        let unit = program.series.first { $0.name == s.name }!.displayUnit
                        return unit.si(v)
                    }
                case .rejected: break
                }
            }
        }
        return outcome
    }

    static func describe(_ list: [(String, Int)]) -> String {
        list.isEmpty ? "none" : list.map { "\($0.0) day \($0.1)" }.joined(separator: ", ")
    }

    /// Runs one case; returns failure messages (empty when it passes).
    package static func run(_ c: RuleTestCase, program: Program) -> [String] {
        let outcome = simulate(c, program: program)
        var failures: [String] = []
        for e in c.expectations {
            switch e {
            case .transitions(let rule, let expected, let line):
                guard program.alert(named: rule) != nil else { failures.append("line \(line): no alert named '\(rule)' in the rules under test"); continue }
                let got = outcome.transitions.filter { $0.rule == rule }.map { ($0.status, $0.day) }
                if got.map({ "\($0.0) \($0.1)" }) != expected.map({ "\($0.0) \($0.1)" }) {
                    failures.append("line \(line): \(rule)\n  expected: \(describe(expected))\n  got:      \(describe(got))")
                }
            case .series(let name, let day, let value, let unit, let tol, let line):
                guard let s = program.series.first(where: { $0.name == name }) else { failures.append("line \(line): no series named '\(name)'"); continue }
                let got = outcome.series[name]?[day] ?? nil
                let show = { (v: Double?) in v.map { "\(Engine.format(unit.fromSI($0), decimals: 4)) \(unit.symbol)" } ?? "missing" }
                if let value {
                    guard unit.dimension == s.type.dimension else { failures.append("line \(line): series '\(name)' is not in \(unit.symbol)"); continue }
                    if got == nil || Swift.abs(unit.fromSI(got!) - value) > tol {
                        failures.append(
                            "line \(line): series \(name) day \(day)\n  expected: \(Engine.format(value, decimals: 4)) \(unit.symbol) ± \(tol)\n  got:      \(show(got))"
                        )
                    }
                } else if got != nil {
                    failures.append("line \(line): series \(name) day \(day)\n  expected: missing\n  got:      \(show(got))")
                }
            case .text(let rule, let headline, let day, let text, let line):
                let t = outcome.transitions.first { $0.rule == rule && $0.day == day }
                let got = t.map { headline ? $0.headline : $0.details }
                if got?.contains(text) != true {
                    failures.append(
                        "line \(line): \(rule) \(headline ? "headline" : "details") on day \(day)\n  expected to contain: \(text)\n  got: \(got ?? "no transition that day")"
                    )
                }
            }
        }
        return failures
    }
}

extension ValueType {
    var dimension: MobilityModel.PhysicalDimension? { if case .number(let d) = self { return d }; return nil }
}
