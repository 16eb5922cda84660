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
               mobilityctl report (--rules DIR --traffic FILE | --state DIR) (--user USER --user USER... | --all-users) ... -o DIR
                 a cohort's reports, one file a user (DIR/USER.PAGE.FORMAT); the traffic is read once
        """

    static func run(_ args: [String]) -> Int32 {
        var rules: [String] = []
        var traffic: String?, state: String?, users: [String] = [], allUsers = false, weekText: String?, output: String?
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
            case "--user": users.append(value())
            case "--all-users": allUsers = true
            case "--week": weekText = value()
            case "--format": formatOption = value()
            case "-o", "--output": output = value()
            case "--time-zone": config.defaultCalendar = LocalCalendar(identifier: value()) ?? { fail("mobilityctl report: unknown time zone") }()
            default: fail("mobilityctl report: unknown argument \(args[i])\n" + usage)
            }
            i += 1
        }
        guard (traffic == nil) != (state == nil) else { fail("mobilityctl report: give either --traffic (with --rules) or --state\n" + usage) }
        guard !users.isEmpty || allUsers, let output, state != nil || !rules.isEmpty else {
            fail("mobilityctl report: --user and -o are required, and --rules with --traffic (a cohort: --all-users)\n" + usage)
        }
        guard !(allUsers && !users.isEmpty) else { fail("mobilityctl report: give --user or --all-users, not both\n" + usage) }
        users = users.reduce(into: []) { if !$0.contains($1) { $0.append($1) } }
        let cohort = allUsers || users.count > 1
        // A cohort's file names are user ids: only ids a topic can carry.
        if cohort, let bad = users.first(where: { !AckCommandLine.isID($0) }) { fail("mobilityctl report: user '\(bad)' is not 1-64 of A-Z a-z 0-9 _ -") }
        guard !cohort || output != "-" else { fail("mobilityctl report: a cohort's reports go to a directory: -o DIR, one file a user\n" + usage) }
        var week: ISOWeek?
        if let weekText {
            guard let w = ISOWeek(parsing: weekText) else { fail("mobilityctl report: '\(weekText)' is not an ISO week such as 2026-W10") }
            week = w
        }
        guard page == "weekly" || page == "panel" else { fail("mobilityctl report: unknown page '\(page)'; expected weekly or panel") }
        let format = formatOption ?? (page == "panel" || output.hasSuffix(".html") ? "html" : "json")
        guard format == "json" || format == "html" else { fail("mobilityctl report: unknown format '\(format)'; expected json or html") }
        guard format == "html" || page == "weekly" else { fail("mobilityctl report: the panel is a page: use --format html") }
        let target = Output(path: output, cohort: cohort, page: page, format: format)
        if let state { return fromState(state, rules: rules, users: allUsers ? nil : users, week: week, page: page, format: format, output: target) }
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
        guard target.prepare() else { return 1 }

        config.publishSeries = true
        var replay = Replay(program: program, configuration: config)
        // One pass over the traffic for every user asked for: each output goes to its user's history.
        let wanted: Set<String>? = allUsers ? nil : Set(users)
        var histories: [String: UserHistory] = [:]
        var out: [EngineOutput] = []
        var lineNo = 0, malformed = 0
        func keep() {
            for o in out {
                switch o {
                case .alert(let a) where wanted?.contains(a.user) ?? true: histories[a.user, default: UserHistory(user: a.user)].record(a)
                case .series(let s) where wanted?.contains(s.user) ?? true: histories[s.user, default: UserHistory(user: s.user)].record(s)
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
        let spec = ReportSpec(declaration)
        var written = 0, failed = 0
        for user in allUsers ? replay.ingestor.engine.allStates.map(\.user).sorted() : users {
            guard let state = replay.ingestor.engine.state(of: user) else {
                writeErr("mobilityctl report: no traffic for user '\(user)' in \(traffic)\n")
                failed += 1
                continue
            }
            var history = histories[user] ?? UserHistory(user: user)
            for e in state.events.values { history.record(e) }
            guard let w = week ?? lastCompleteWeek(history) else {
                writeErr("mobilityctl report: user '\(user)' has no complete week of closed days in \(traffic); name one with --week\n")
                failed += 1
                continue
            }
            let digest = WeeklyDigest.make(history: history, spec: spec, week: w)
            guard write(render(digest: digest, history: history, spec: spec, page: page, format: format), to: target.path(of: user)) else { return 1 }
            written += 1
            if !cohort {
                writeErr("mobilityctl report: \(user) \(w) (\(CivilDate(dayNumber: w.monday))..\(CivilDate(dayNumber: w.sunday))), ")
            }
        }
        if cohort {
            writeErr("mobilityctl report: \(written) report\(written == 1 ? "" : "s") in \(output), \(failed) user\(failed == 1 ? "" : "s") without one, ")
        }
        writeErr("\(malformed) malformed line\(malformed == 1 ? "" : "s")\n")
        return failed > 0 ? 1 : malformed > 0 ? ReplayCommand.malformedExit : 0
    }

    /// Where reports go: one file or standard output, or for a cohort a directory with a file a
    /// user (`USER.PAGE.FORMAT`; user ids are topic segments, A-Z a-z 0-9 _ -, so file names).
    struct Output {
        let path: String
        let cohort: Bool
        let page: String
        let format: String

        func path(of user: String) -> String { cohort ? "\(path)/\(user).\(page).\(format)" : path }

        /// Creates a cohort's directory, or takes an existing one of the user's, readable by the
        /// owner only (0700: health data); false after saying why it cannot.
        func prepare() -> Bool {
            guard cohort else { return true }
            var st = stat()
            if lstat(path, &st) == 0 {
                // lstat, not stat: a symbolic link planted at the name is refused, not followed
                // (chmod and the reports would land in whatever it points at).
                guard st.st_mode & S_IFMT == S_IFDIR else {
                    writeErr(
                        "mobilityctl report: \(path) is not a directory (-o names a directory of your own for several users' reports; "
                            + "a symbolic link is not followed)\n")
                    return false
                }
                guard st.st_uid == geteuid() else {
                    writeErr("mobilityctl report: \(path) belongs to another user; reports (health data) go only to a directory of your own\n")
                    return false
                }
                guard chmod(path, 0o700) == 0 else {
                    writeErr("mobilityctl report: cannot make \(path) readable by its owner only: \(String(cString: strerror(errno)))\n")
                    return false
                }
                return true
            }
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                return true
            } catch {
                writeErr("mobilityctl report: cannot create \(path): \(error.localizedDescription)\n")
                return false
            }
        }
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
            // Health data: readable by the owner only from the first byte, like the daemon's
            // state; written beside its name and renamed into place (``ExportCommand/Sink``).
            guard let sink = ExportCommand.Sink(output, command: "report") else { return false }
            do {
                try sink.write(text)
                try sink.finish()
            } catch {
                writeErr("mobilityctl report: \(error)\n")
                return false
            }
        }
        return true
    }

    /// From a mobilityd state directory: the stored weekly report (latest, or `week`) and the
    /// stored history; the report block of `rules`, or of the rules the daemon last ran (kept in
    /// its store).
    /// `users` nil: every user with history. The store is opened read-only: mobilityd may be running.
    static func fromState(_ dir: String, rules: [String], users: [String]?, week: ISOWeek?, page: String, format: String, output: Output) -> Int32 {
        let path = dir + "/state.sqlite"
        guard FileManager.default.fileExists(atPath: path) else {
            writeErr("mobilityctl report: \(dir) holds no mobilityd state (no state.sqlite)\n"); return 1
        }
        do {
            let store = try StateStore(path: path, readOnly: true)
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
            guard output.prepare() else { return 1 }
            var written = 0, failed = 0
            for user in try users ?? store.historyUsers() {
                guard let stored = try store.weeklyReport(of: user, week: week?.description) else {
                    writeErr("mobilityctl report: no weekly report of '\(user)'\(week.map { " for \($0)" } ?? "") in \(dir)\n")
                    failed += 1
                    continue
                }
                guard case .success(let digest) = WeeklyDigest.decode(stored.payload) else {
                    writeErr("mobilityctl report: the stored report of \(stored.week) cannot be read\n")
                    failed += 1
                    continue
                }
                let history = try store.history(
                    of: user, from: page == "panel" ? .min : digest.firstDay - 120, through: page == "panel" ? .max : digest.lastDay)
                guard write(render(digest: digest, history: history, spec: ReportSpec(declaration), page: page, format: format), to: output.path(of: user))
                else { return 1 }
                written += 1
                if !output.cohort { writeErr("mobilityctl report: \(user) \(digest.week) from \(dir)\n") }
            }
            if output.cohort {
                writeErr(
                    "mobilityctl report: \(written) report\(written == 1 ? "" : "s") in \(output.path) from \(dir), \(failed) user\(failed == 1 ? "" : "s") without one\n"
                )
            }
            return failed > 0 ? 1 : 0
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
