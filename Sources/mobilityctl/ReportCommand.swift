import CareReports
import Foundation
import Ingest
import MobilityModel
import RuleEngine
import RuleLanguage
import StateStore

/// `mobilityctl report (--rules DIR --traffic FILE | --state DIR [--rules DIR]) --user U [--week W]
/// [--page weekly|panel] [--format json|html] -o OUT`: the user's history, either replayed from
/// recorded traffic (or what `mobility-sim export` made of an Apple Health export) through the
/// engine, or read from a mobilityd state directory; then the weekly digest of the week (default:
/// the last complete week with data; from a state directory, the daemon's stored report) as
/// JSON, or a page (the weekly report, or the recovery panel) as HTML.
enum ReportCommand {
    static let usage = """
        usage: mobilityctl report --rules DIR --traffic FILE --user USER [--week 2026-W10] [--page weekly|panel] [--format json|html] -o OUT|-
               mobilityctl report --state DIR [--rules DIR] --user USER [--week 2026-W10] [--page weekly|panel] [--format json|html] -o OUT|-
        """

    static func run(_ args: [String]) -> Int32 {
        var rules: [String] = []
        var traffic: String?, state: String?, user: String?, weekText: String?, output: String?
        var formatOption: String?, page = "weekly"
        var config = EngineConfiguration()
        var i = 0
        func value() -> String {
            i += 1
            guard i < args.count else { fail("mobilityctl report: \(args[i - 1]) needs a value\n" + usage) }
            return args[i]
        }
        while i < args.count {
            switch args[i] {
            case "--rules": rules.append(value())
            case "--traffic": traffic = value()
            case "--state": state = value()
            case "--page": page = value()
            case "--user": user = value()
            case "--week": weekText = value()
            case "--format": formatOption = value()
            case "-o", "--output": output = value()
            case "--time-zone": config.defaultCalendar = LocalCalendar(identifier: value()) ?? { fail("mobilityctl report: unknown time zone") }()
            default: fail("mobilityctl report: unknown argument \(args[i])\n" + usage)
            }
            i += 1
        }
        guard (traffic == nil) != (state == nil) else { fail("mobilityctl report: give either --traffic (with --rules) or --state\n" + usage) }
        guard let user, let output, state != nil || !rules.isEmpty else {
            fail("mobilityctl report: --user and -o are required, and --rules with --traffic\n" + usage)
        }
        var week: ISOWeek?
        if let weekText {
            guard let w = ISOWeek(parsing: weekText) else { fail("mobilityctl report: '\(weekText)' is not an ISO week such as 2026-W10") }
            week = w
        }
        guard page == "weekly" || page == "panel" else { fail("mobilityctl report: unknown page '\(page)'; expected weekly or panel") }
        let format = formatOption ?? (page == "panel" || output.hasSuffix(".html") ? "html" : "json")
        guard format == "json" || format == "html" else { fail("mobilityctl report: unknown format '\(format)'; expected json or html") }
        guard format == "html" || page == "weekly" else { fail("mobilityctl report: the panel is a page: use --format html") }
        if let state { return fromState(state, rules: rules, user: user, week: week, page: page, format: format, output: output) }
        guard let traffic else { return 2 }
        let (sources, errors) = RuleSet.load(rules)
        guard errors.isEmpty else { errors.forEach { writeErr("mobilityctl: \($0)\n") }; return 1 }
        let (program, diagnostics) = Checker.check(sources)
        guard let program else {
            writeErr(DiagnosticRenderer(files: sources).render(diagnostics))
            return 1
        }
        guard let declaration = program.report else { writeErr("mobilityctl report: the rules declare no report block\n"); return 1 }
        guard let input = FileHandle(forReadingAtPath: traffic) else { writeErr("mobilityctl report: cannot read \(traffic)\n"); return 1 }

        config.publishSeries = true
        var replay = Replay(program: program, configuration: config)
        var history = UserHistory(user: user)
        var out: [EngineOutput] = []
        var lineNo = 0, malformed = 0
        func keep() {
            for o in out {
                switch o {
                case .alert(let a) where a.user == user: history.record(a)
                case .series(let s) where s.user == user: history.record(s)
                default: break
                }
            }
            out.removeAll(keepingCapacity: true)
        }
        for line in LineReader(input) {
            lineNo += 1
            if line.isEmpty { continue }
            if let e = replay.feed(line: line, into: &out) {
                malformed += 1
                if malformed <= ReplayCommand.maxMalformedShown { writeErr("\(traffic):\(lineNo): malformed line: \(e)\n") }
            }
            keep()
        }
        replay.finish(into: &out)
        keep()
        guard let state = replay.ingestor.engine.state(of: user) else {
            writeErr("mobilityctl report: no traffic for user '\(user)' in \(traffic)\n")
            return 1
        }
        for e in state.events.values { history.record(e) }
        guard let w = week ?? lastCompleteWeek(history) else {
            writeErr("mobilityctl report: user '\(user)' has no complete week of closed days in \(traffic); name one with --week\n")
            return 1
        }
        let spec = ReportSpec(declaration)
        let digest = WeeklyDigest.make(history: history, spec: spec, week: w)
        guard write(render(digest: digest, history: history, spec: spec, page: page, format: format), to: output) else { return 1 }
        writeErr(
            "mobilityctl report: \(user) \(w) (\(CivilDate(dayNumber: w.monday))..\(CivilDate(dayNumber: w.sunday))), \(malformed) malformed line\(malformed == 1 ? "" : "s")\n"
        )
        return malformed > 0 ? ReplayCommand.malformedExit : 0
    }

    /// The output: the digest's JSON, or the page.
    static func render(digest: WeeklyDigest, history: UserHistory, spec: ReportSpec, page: String, format: String) -> String {
        if format == "json" { return digest.json + "\n" }
        return page == "panel" ? ReportPage.panel(history: history, spec: spec) : ReportPage.weekly(digest: digest, history: history, spec: spec)
    }

    /// Writes `text` to `output` (`-`: standard output, with the control and bidirectional
    /// characters its JSON strings or page text may hold as JSON escapes, ``TerminalText/json(_:)``,
    /// as it may be a terminal), readable by the owner only.
    static func write(_ text: String, to output: String) -> Bool {
        if output == "-" {
            FileHandle.standardOutput.write(Data(TerminalText.json(text).utf8))
        } else {
            // Health data: readable by the owner only, like the daemon's state.
            try? FileManager.default.removeItem(atPath: output)
            guard FileManager.default.createFile(atPath: output, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
                writeErr("mobilityctl report: cannot write \(output)\n")
                return false
            }
        }
        return true
    }

    /// From a mobilityd state directory: the stored weekly report (latest, or `week`) and the
    /// stored history; the report block of `rules`, or of the rules the daemon last ran (kept in
    /// its store).
    static func fromState(_ dir: String, rules: [String], user: String, week: ISOWeek?, page: String, format: String, output: String) -> Int32 {
        let path = dir + "/state.sqlite"
        guard FileManager.default.fileExists(atPath: path) else {
            writeErr("mobilityctl report: \(dir) holds no mobilityd state (no state.sqlite)\n"); return 1
        }
        do {
            let store = try StateStore(path: path)
            var sources: [SourceFile]
            if rules.isEmpty {
                guard let text = try store.meta("rules_sources"), case .success(.object(let files)) = JSONValue.parse(Array(text.utf8)) else {
                    writeErr("mobilityctl report: the state holds no rules; name them with --rules\n")
                    return 1
                }
                sources = files.compactMap { if case .string(let t) = $0.1 { SourceFile(path: $0.0, text: t) } else { nil } }
            } else {
                let (loaded, errors) = RuleSet.load(rules)
                guard errors.isEmpty else { errors.forEach { writeErr("mobilityctl: \($0)\n") }; return 1 }
                sources = loaded
            }
            let (program, diagnostics) = Checker.check(sources)
            guard let program else { writeErr(DiagnosticRenderer(files: sources).render(diagnostics)); return 1 }
            guard let declaration = program.report else { writeErr("mobilityctl report: the rules declare no report block\n"); return 1 }
            guard let stored = try store.weeklyReport(of: user, week: week?.description) else {
                writeErr("mobilityctl report: no weekly report of '\(user)'\(week.map { " for \($0)" } ?? "") in \(dir)\n")
                return 1
            }
            guard case .success(let digest) = WeeklyDigest.decode(stored.payload) else {
                writeErr("mobilityctl report: the stored report of \(stored.week) cannot be read\n")
                return 1
            }
            let history = try store.history(of: user, from: page == "panel" ? .min : digest.firstDay - 120, through: page == "panel" ? .max : digest.lastDay)
            guard write(render(digest: digest, history: history, spec: ReportSpec(declaration), page: page, format: format), to: output) else { return 1 }
            writeErr("mobilityctl report: \(user) \(digest.week) from \(dir)\n")
            return 0
        } catch {
            writeErr("mobilityctl report: cannot read \(path): \(error)\n")
            return 1
        }
    }

    /// The last week whose Sunday is a closed day of the history (the latest day with a series point).
    static func lastCompleteWeek(_ h: UserHistory) -> ISOWeek? {
        guard let last = h.series.values.compactMap({ $0.keys.max() }).max() else { return nil }
        let w = ISOWeek(containing: last)
        return last == w.sunday ? w : w.previous
    }
}
