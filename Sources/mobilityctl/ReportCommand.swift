import CareReports
import Foundation
import MobilityModel
import RuleEngine
import RuleLanguage

/// `mobilityctl report --rules DIR --traffic FILE --user U [--week W] [--format json] -o OUT`: replays
/// recorded traffic (or what `mobility-sim export` made of an Apple Health export) through the
/// engine, keeps the user's series points, alert transitions and timeline as a ``UserHistory``
/// and writes the weekly digest of the week (default: the last complete week with data).
enum ReportCommand {
    static let usage = "usage: mobilityctl report --rules DIR --traffic FILE --user USER [--week 2026-W10] [--format json|html] -o OUT|-"

    static func run(_ args: [String]) -> Int32 {
        var rules: [String] = []
        var traffic: String?, user: String?, weekText: String?, output: String?
        var format = "json"
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
            case "--user": user = value()
            case "--week": weekText = value()
            case "--format": format = value()
            case "-o", "--output": output = value()
            case "--time-zone": config.defaultCalendar = LocalCalendar(identifier: value()) ?? { fail("mobilityctl report: unknown time zone") }()
            default: fail("mobilityctl report: unknown argument \(args[i])\n" + usage)
            }
            i += 1
        }
        guard !rules.isEmpty, let traffic, let user, let output else {
            fail("mobilityctl report: --rules, --traffic, --user and -o are required\n" + usage)
        }
        var week: ISOWeek?
        if let weekText {
            guard let w = ISOWeek(parsing: weekText) else { fail("mobilityctl report: '\(weekText)' is not an ISO week such as 2026-W10") }
            week = w
        }
        switch format {
        case "json": break
        case "html": fail("mobilityctl report: --format html is not available yet (the page renderer is not built in); use --format json")
        default: fail("mobilityctl report: unknown format '\(format)'; expected json or html")
        }
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
        let digest = WeeklyDigest.make(history: history, spec: ReportSpec(declaration), week: w)
        let text = digest.json + "\n"
        if output == "-" {
            FileHandle.standardOutput.write(Data(text.utf8))
        } else {
            // Health data: readable by the owner only, like the daemon's state.
            try? FileManager.default.removeItem(atPath: output)
            guard FileManager.default.createFile(atPath: output, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
                writeErr("mobilityctl report: cannot write \(output)\n")
                return 1
            }
        }
        writeErr("mobilityctl report: \(user) \(w) (\(CivilDate(dayNumber: w.monday))..\(CivilDate(dayNumber: w.sunday))), \(malformed) malformed line\(malformed == 1 ? "" : "s")\n")
        return malformed > 0 ? ReplayCommand.malformedExit : 0
    }

    /// The last week whose Sunday is a closed day of the history (the latest day with a series point).
    static func lastCompleteWeek(_ h: UserHistory) -> ISOWeek? {
        guard let last = h.series.values.compactMap({ $0.keys.max() }).max() else { return nil }
        let w = ISOWeek(containing: last)
        return last == w.sunday ? w : w.previous
    }
}
