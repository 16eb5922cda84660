import CareReports
import Foundation
import Ingest
import MobilityModel
import RuleEngine
import RuleLanguage
import Simulator
import StateStore
import TestSupport
import Testing

/// `mobilityctl export` of a labelled cohort's state, built as mobilityd records it (the cohort's
/// traffic through the engine, every series point, alert transition and timeline entry in the
/// store's history, staff entries with who entered them), read back with pandas: the values are
/// the history API's, the clinical events and annotations are on their days, the bytes do not
/// depend on the locale, and the store is not written.
@Suite(.serialized) struct ExportCohortTests {
    static func run(_ args: [String], environment: [String: String] = [:]) throws -> ProductRun {
        try ExportCommandTests.run(args, environment: environment)
    }

    @Test func aCohortIsExportedAsTheHistoryAPIGivesItAndPandasReadsIt() throws {
        let cohort = try CohortState(users: 12, days: 90, seed: 3)
        let before = try Data(contentsOf: URL(fileURLWithPath: cohort.dir + "/state.sqlite"))
        let listed = Set(try FileManager.default.contentsOfDirectory(atPath: cohort.dir))
        let csv = cohort.dir + "/../export-\(UUID().uuidString.prefix(8)).csv"
        TemporaryPath.removeAtExit(csv)
        let r = try Self.run(["--state", cohort.dir, "--format", "csv", "-o", csv], environment: ["LANG": "C", "LC_ALL": "C"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("of 12 users"), "\(r.stderr)")
        let attributes = try FileManager.default.attributesOfItem(atPath: csv)
        #expect((attributes[.posixPermissions] as? Int) == 0o600, "health data: readable by the owner only")
        #expect(try Data(contentsOf: URL(fileURLWithPath: cohort.dir + "/state.sqlite")) == before, "the export wrote to the store")
        // Only SQLite's WAL and shared-memory files may be new beside the store, readable by the owner only.
        let added = Set(try FileManager.default.contentsOfDirectory(atPath: cohort.dir)).subtracting(listed)
        #expect(added.isSubset(of: ["state.sqlite-wal", "state.sqlite-shm"]), "\(added.sorted())")
        for name in try FileManager.default.contentsOfDirectory(atPath: cohort.dir) where name.hasPrefix("state.sqlite") {
            let mode = try FileManager.default.attributesOfItem(atPath: cohort.dir + "/" + name)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(name): \(String(describing: mode.map { String($0, radix: 8) }))")
        }

        // The same bytes in a German locale (decimal comma) and on standard output.
        let german = try Self.run(["--state", cohort.dir, "--format", "csv"], environment: ["LANG": "de_DE.UTF-8", "LC_ALL": "de_DE.UTF-8"])
        #expect(german.status == 0, "\(german.stderr)")
        let text = try String(contentsOfFile: csv, encoding: .utf8)
        #expect(german.stdout == text)
        #expect(text.hasPrefix("user,day,recorded,asymmetry,speed_p95,"))
        #expect(text.hasSuffix("\r\n"))

        // Every recorded user-day and the days the staff entries cover, through pandas.
        let staff = cohort.staffDays
        var picks: [(String, DayNumber)] = staff.map { ("u0", $0) }
        for (k, key) in cohort.published.keys.sorted(by: { ($0.user, $0.day) < ($1.user, $1.day) }).enumerated() where k % 97 == 0 {
            picks.append((key.user, key.day))
        }
        picks += cohort.firingDays
        let read = try Pandas.read(csv, picks: picks)
        #expect(read.rows == text.split(separator: "\r\n").count - 1)
        #expect(read.recordedRows == cohort.published.keys.count, "a row for every user-day the store recorded")
        let seriesNames = cohort.series.map(\.name)
        #expect(read.columns == ResearchTable.leadingColumns + seriesNames + ResearchTable.timelineColumns + ResearchTable.alertColumns)
        for name in seriesNames { #expect(read.dtypes[name] == "float64", "\(name) is numeric in pandas") }
        #expect(read.dtypes["day"]?.hasPrefix("datetime64") == true)

        let store = try StateStore(path: cohort.dir + "/state.sqlite", readOnly: true)
        var compared = 0, known = 0
        for (user, day) in picks {
            let key = "\(user) \(CivilDate(dayNumber: day))"
            let row = try #require(read.picked[key] ?? nil, "no row for \(key)")
            let h = try store.history(of: user, from: day, through: day)
            for s in cohort.series {
                // The history API's value (HistoryAPI.seriesJSON): the stored SI value in the series' unit, rounded to 1e-6.
                let si = h.series[s.name]?[day] ?? nil
                let api = si.map { ($0 / (MeasureUnit.rule(s.unit) ?? .one).toSI * 1e6).rounded() / 1e6 }
                #expect(row[s.name]?.number == api, "\(key) \(s.name): csv \(String(describing: row[s.name])) vs api \(String(describing: api))")
                // … and what the engine published for that day.
                let published = cohort.published[UserDay(user: user, day: day)]?[s.name] ?? nil
                #expect((published == nil) == (api == nil), "\(key) \(s.name)")
                if let p = published, let a = api { #expect(abs(p - a) <= 5e-7, "\(key) \(s.name)") }
                compared += 1
                if api != nil { known += 1 }
            }
        }
        #expect(compared >= 10 * cohort.series.count)
        #expect(known >= compared / 3, "most compared values are known, not only missing ones")

        // The staff's fall on its day with who entered it; the annotation on each day it covers,
        // its author's name with a comma, quotes and a semicolon read back as typed.
        let fallRow = try #require(read.picked["u0 \(CivilDate(dayNumber: cohort.fallDay))"] ?? nil)
        #expect(fallRow["clinical_events"]?.text == "fall")
        #expect(fallRow["clinical_event_ids"]?.text == "fall-1")
        #expect(fallRow["clinical_events_entered_by"]?.text == "nurse.kim")
        for day in cohort.painDays {
            let row = try #require(read.picked["u0 \(CivilDate(dayNumber: day))"] ?? nil)
            #expect(row["annotations"]?.text == "pain", "\(CivilDate(dayNumber: day))")
            #expect(row["annotation_ids"]?.text == "pain-1")
            #expect(row["annotations_entered_by"]?.text == #"o'neil, "jo"\; ward 2"#)
        }
        let after = try #require(read.picked["u0 \(CivilDate(dayNumber: cohort.painDays.last! + 1))"] ?? nil)
        #expect(after["annotations"] == .null)
        // The alerts the engine fired: on the day they fired, with their instance id.
        #expect(!cohort.firings.isEmpty)
        for (key, id) in cohort.firings {
            let row = try #require(read.picked[key] ?? nil, "no row for \(key)")
            #expect(row["alert_ids"]?.text?.split(separator: ";").contains(Substring(id)) == true, "\(key): \(id)")
        }
        // The injuries the cohort's phones sent: on their day, entered by no one.
        #expect(read.injuries == cohort.injuries, "injury rows (user day) from pandas vs the engine's timeline")
    }

    /// The store is opened read-only: a store of an older schema (a mobilityd not yet upgraded)
    /// is read as it is, never migrated under its daemon.
    @Test func anExportNeverMigratesTheStore() throws {
        let cohort = try CohortState(users: 2, days: 10, seed: 9)
        let path = cohort.dir + "/state.sqlite"
        func version(set: Int? = nil) throws -> String {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            let sql = set.map { "c.execute('PRAGMA user_version = \($0)'); c.commit(); " } ?? ""
            p.arguments = ["-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); \(sql)print(c.execute('PRAGMA user_version').fetchone()[0])", path]
            let out = Pipe()
            p.standardOutput = out
            try p.run()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(try version() == String(StateStore.schemaVersion))
        let older = StateStore.schemaVersion - 1
        #expect(try version(set: older) == String(older))
        let r = try Self.run(["--state", cohort.dir])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("of 2 users"), "\(r.stderr)")
        #expect(try version() == String(older), "the export migrated the store")
    }

    @Test func aTeamSelectsItsUsersAndAnUnknownTeamIsAFailure() throws {
        let cohort = try CohortState(users: 6, days: 20, seed: 5)
        var r = try Self.run(["--state", cohort.dir, "--team", "north"])
        #expect(r.status == 0, "\(r.stderr)")
        let users = Set(r.stdout.split(separator: "\r\n").dropFirst().map { String($0.prefix { $0 != "," }) })
        #expect(users == ["u0", "u2", "u4"])
        r = try Self.run(["--state", cohort.dir, "--team", "east", "--from", "2026-01-01"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("no user of team 'east' has history in"), "\(r.stderr)")
        #expect(r.stderr.contains("north, south"), "\(r.stderr)")
        // A range selects its days.
        r = try Self.run([
            "--state", cohort.dir, "--from", CivilDate(dayNumber: cohort.fallDay).description, "--to", CivilDate(dayNumber: cohort.fallDay).description
        ])
        #expect(r.status == 0, "\(r.stderr)")
        let days = Set(r.stdout.split(separator: "\r\n").dropFirst().map { $0.split(separator: ",")[1] })
        #expect(days == [Substring(CivilDate(dayNumber: cohort.fallDay).description)])
    }

    /// The file an export writes before renaming it into place is a new file of its own: a
    /// symbolic link or a readable file already at its name is refused, and neither it nor what
    /// it points to is written.
    @Test func aFileOrLinkAlreadyAtThePartialNameIsRefused() throws {
        let cohort = try CohortState(users: 2, days: 10, seed: 9)
        let out = cohort.dir + "/../planted-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        TemporaryPath.removeAtExit(out)
        let victim = out + "/victim", csv = out + "/export.csv"
        try Data("victim\n".utf8).write(to: URL(fileURLWithPath: victim))
        chmod(victim, 0o644)
        for plant in ["ln -s \"$V\" \"$O.partial-$$\"", "printf old > \"$O.partial-$$\"; chmod 644 \"$O.partial-$$\""] {
            // The shell plants the name with its own process id, then becomes mobilityctl (same id).
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/bin/sh")
            p.arguments = ["-c", plant + "; exec \"$CTL\" export --state \"$S\" -o \"$O\""]
            p.environment = ["V": victim, "O": csv, "S": cohort.dir, "CTL": ChildProcess.product("mobilityctl"), "LANG": "C"]
            let err = Pipe()
            p.standardError = err
            try p.run()
            let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            #expect(p.terminationStatus == 1, "\(plant): \(stderr)")
            #expect(stderr.contains("already exists"), "\(plant): \(stderr)")
            #expect(!FileManager.default.fileExists(atPath: csv), "\(plant)")
            #expect(try String(contentsOfFile: victim, encoding: .utf8) == "victim\n", "\(plant): the link's target was written")
            let names = try FileManager.default.contentsOfDirectory(atPath: out).filter { $0.hasPrefix("export.csv.partial-") }
            #expect(names.count == 1, "\(names)")
            for name in names {
                let planted = out + "/" + name
                let kind = try FileManager.default.attributesOfItem(atPath: planted)[.type] as? FileAttributeType
                if plant.hasPrefix("ln") {
                    #expect(kind == .typeSymbolicLink)
                } else {
                    #expect(try String(contentsOfFile: planted, encoding: .utf8) == "old", "the planted file was written")
                }
                try FileManager.default.removeItem(atPath: planted)
            }
        }
    }
}

/// A user and a day (a published series day's key).
struct UserDay: Hashable {
    var user: String
    var day: DayNumber
}

/// A state directory holding a cohort's history as mobilityd records it: the `Population`
/// cohort's traffic through the engine (event clock, series published), each series point, alert
/// transition and timeline entry as a history row, the users' states with their care teams
/// (even users `north`, odd users `south`), and two staff entries of `u0`: a fall and a pain
/// annotation over three days.
struct CohortState {
    let dir: String
    /// The series the rules publish, in their order, with their units.
    let series: [(name: String, unit: String)]
    /// What the engine published: user-day → series → value in the series' unit (the latest revision).
    let published: [UserDay: [String: Double?]]
    /// The injuries of the cohort's timeline, as `user day` strings, sorted.
    let injuries: [String]
    /// The first firings of alerts that were never withdrawn (at most 5): `user day` → instance id.
    let firings: [String: String]
    var firingDays: [(String, DayNumber)] {
        firings.keys.map { k in (String(k.prefix { $0 != " " }), CivilDate(parsing: k.split(separator: " ")[1])!.dayNumber) }
    }
    let fallDay: DayNumber
    let painDays: [DayNumber]
    var staffDays: [DayNumber] { [fallDay] + painDays + [painDays.last! + 1] }

    init(users: Int, days: Int, seed: UInt64) throws {
        dir = TemporaryPath.make("mw-export-state")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let program = try #require(Checker.check(RuleSet.load([RepoPaths.rules]).sources).program)
        var configuration = EngineConfiguration()
        configuration.publishSeries = true
        var ingestor = Ingestor(engine: Engine(program: program, configuration: configuration), clock: .event)
        var out: [EngineOutput] = []
        for r in Population(users: users, days: days, seed: seed).traffic() {
            ingestor.handle(topic: r.topic, payload: r.payload, now: Timestamp(milliseconds: 0), into: &out)
        }
        ingestor.closeOpenDays(into: &out)
        var history: [HistoryRecord] = []
        var published: [UserDay: [String: Double?]] = [:]
        var series: [(name: String, unit: String)] = []
        var firings: [String: String] = [:]
        let withdrawn = Set(out.compactMap { if case .alert(let a) = $0, a.isWithdrawal { a.id } else { nil } })
        for o in out {
            switch o {
            case .series(let p):
                history.append(.series(p))
                published[UserDay(user: p.user, day: p.day.dayNumber), default: [:]][p.name] = .some(p.value)
                if !series.contains(where: { $0.name == p.name }) { series.append((p.name, p.unit)) }
            case .alert(let a):
                history.append(.alert(a))
                if a.status == .firing, !a.isRepeat, a.day == a.firedDay, !withdrawn.contains(a.id), firings.count < 5 {
                    firings["\(a.user) \(a.day)"] = a.id
                }
            case .rejected: break
            }
        }
        let store = try StateStore(path: dir + "/state.sqlite")
        var records: [StateStore.UserRecord] = []
        var injuries: [String] = []
        for (k, state) in ingestor.engine.allStates.enumerated() {
            let user = state.user
            for e in ingestor.engine.timeline(of: user) {
                history.append(.timeline(user: user, e))
                if e.kind == "injury" { injuries.append("\(user) \(CivilDate(dayNumber: e.firstDay))") }
            }
            var snapshot = try #require(ingestor.engine.changes(of: user))
            snapshot.hasProfile = true
            snapshot.careTeams = [Int(user.dropFirst()).map { $0 % 2 == 0 ? "north" : "south" } ?? "north"]
            records.append(StateStore.UserRecord(user: user, appliedSeq: UInt64(k + 1), eventNow: nil, state: snapshot))
        }
        let first = try #require(published.keys.filter { $0.user == "u0" }.map(\.day).min())
        fallDay = first + Int32(days / 2)
        painDays = [fallDay + 2, fallDay + 3, fallDay + 4]
        let at = try #require(ISO8601.parse("2026-03-21T09:12:00Z")?.0)
        history.append(
            .timeline(
                user: "u0",
                TimelineEvent(
                    id: "fall-1", category: .clinical, kind: "fall", firstDay: fallDay, lastDay: fallDay, note: "tripped at home",
                    entered: EntryAttribution(by: "nurse.kim", team: "north", at: at))))
        history.append(
            .timeline(
                user: "u0",
                TimelineEvent(
                    id: "pain-1", category: .annotation, kind: "pain", firstDay: painDays[0], lastDay: painDays[2],
                    entered: EntryAttribution(by: #"o'neil, "jo"; ward 2"#, team: "north", at: at))))
        _ = try store.commit(users: records, outbox: [], history: history)
        self.series = series
        self.firings = firings
        self.published = published
        self.injuries = injuries.sorted()
    }
}

/// The export read with pandas (`read_csv` with its defaults, the day parsed as a date), in the
/// venv `scripts/install-deps.sh` installs pandas into (`MOBILITYWATCH_RESEARCH_VENV`, default
/// `~/.cache/mobilitywatch/research-venv`).
enum Pandas {
    /// A cell as pandas read it.
    enum Cell: Equatable {
        case null
        case number(Double)
        case text(String)

        var number: Double? { if case .number(let v) = self { v } else { nil } }
        var text: String? { if case .text(let s) = self { s } else { nil } }
    }

    struct Read {
        var columns: [String]
        var dtypes: [String: String]
        var rows: Int
        var recordedRows: Int
        /// `user day` → column → cell (nil: no such row).
        var picked: [String: [String: Cell]?]
        /// The rows with an injury: `user day`, sorted.
        var injuries: [String]
    }

    static let script = """
        import json, sys
        import pandas as pd
        df = pd.read_csv(sys.argv[1], parse_dates=["day"], dtype={"user": "string"})
        picks = json.loads(sys.argv[2])
        def cell(v):
            if pd.isna(v): return None
            if hasattr(v, "isoformat"): return v.isoformat()
            return v.item() if hasattr(v, "item") else v
        picked = {}
        for user, day in picks:
            r = df[(df.user == user) & (df.day == pd.Timestamp(day))]
            picked[user + " " + day] = None if r.empty else {c: cell(v) for c, v in r.iloc[0].items()}
        inj = df[df.clinical_events.fillna("").str.split(";").apply(lambda ks: "injury" in ks)]
        print(json.dumps({
            "columns": list(df.columns), "dtypes": {c: str(t) for c, t in df.dtypes.items()}, "rows": len(df),
            "recorded": int((df.recorded == 1).sum()), "picked": picked,
            "injuries": sorted(u + " " + d.strftime("%Y-%m-%d") for u, d in zip(inj.user, inj.day)),
        }))
        """

    static var python: String {
        let env = ProcessInfo.processInfo.environment
        return (env["MOBILITYWATCH_RESEARCH_VENV"] ?? ((env["HOME"] ?? "/root") + "/.cache/mobilitywatch/research-venv")) + "/bin/python"
    }

    static func read(_ csv: String, picks: [(String, DayNumber)]) throws -> Read {
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw HarnessError("pandas is not installed at \(python); run scripts/install-deps.sh")
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: python)
        let pickJSON = "[" + picks.map { "[\"\($0.0)\",\"\(CivilDate(dayNumber: $0.1))\"]" }.joined(separator: ",") + "]"
        p.arguments = ["-c", script, csv, pickJSON]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile(), errors = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0, case .success(let v) = JSONValue.parse(Array(data)) else {
            throw HarnessError("pandas failed: \(String(decoding: errors, as: UTF8.self))")
        }
        func strings(_ j: JSONValue?) -> [String] {
            guard case .array(let a)? = j else { return [] }
            return a.compactMap { if case .string(let s) = $0 { s } else { nil } }
        }
        var dtypes: [String: String] = [:]
        if case .object(let o)? = v["dtypes"] { for (k, t) in o { if case .string(let s) = t { dtypes[k] = s } } }
        var picked: [String: [String: Cell]?] = [:]
        if case .object(let o)? = v["picked"] {
            for (key, row) in o {
                guard case .object(let cells) = row else {
                    picked[key] = .some(nil)
                    continue
                }
                var r: [String: Cell] = [:]
                for (c, x) in cells {
                    switch x {
                    case .number(let n): r[c] = .number(n)
                    case .string(let s): r[c] = .text(s)
                    default: r[c] = .null
                    }
                }
                picked[key] = r
            }
        }
        guard case .number(let rows)? = v["rows"], case .number(let recorded)? = v["recorded"] else { throw HarnessError("pandas: no row count") }
        return Read(
            columns: strings(v["columns"]), dtypes: dtypes, rows: Int(rows), recordedRows: Int(recorded), picked: picked, injuries: strings(v["injuries"]))
    }
}
