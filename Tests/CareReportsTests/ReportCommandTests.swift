import CareReports
import Foundation
import MobilityModel
import TestSupport
import Testing

/// `mobilityctl report`, the built executable, end to end: a shipped scenario recorded by
/// `mobility-sim record`, an Apple Health export through `mobility-sim export`, and bad arguments.
@Suite(.serialized) struct ReportCommandTests {
    static func run(_ tool: String, _ args: [String]) throws -> ProductRun { try ProductRun(tool, args) }

    static func temp(_ suffix: String) -> String { TemporaryPath.make("mw-report", suffix: suffix) }

    /// Jamie's heat wave: the digest of 2026-W09 (Mon 23 Feb – Sun 1 Mar, the heat wave's first
    /// week) against numbers computed here from `mobilityctl replay --series` of the same traffic.
    @Test func theHeatWaveWeekMatchesTheReplaysSeries() throws {
        let traffic = Self.temp(".jsonl"), out = Self.temp(".json")
        defer { try? FileManager.default.removeItem(atPath: traffic); try? FileManager.default.removeItem(atPath: out) }
        let rec = try Self.run("mobility-sim", ["record", RepoPaths.root + "/simulator/scenarios/jamie-heat-wave.scenario", "-o", traffic])
        try #require(rec.status == 0, "\(rec.stderr)")
        let r = try Self.run(
            "mobilityctl", ["report", "--rules", RepoPaths.rules, "--traffic", traffic, "--user", "jamie-heat-wave", "--week", "2026-W09", "-o", out])
        try #require(r.status == 0, "\(r.stderr)")
        let attrs = try FileManager.default.attributesOfItem(atPath: out)
        #expect((attrs[.posixPermissions] as? Int) == 0o600)
        let d = try WeeklyDigest.decode(Array(try Data(contentsOf: URL(fileURLWithPath: out)))).get()

        // Independently: the replay's published series lines, by series and day.
        let rep = try Self.run("mobilityctl", ["replay", "--rules", RepoPaths.rules, "--series", traffic])
        try #require(rep.status == 0)
        var series: [String: [String: Double?]] = [:]
        var explanationFirings: [String] = []
        for line in rep.stdout.split(separator: "\n") {
            guard case .success(let v) = JSONValue.parse(String(line)) else { continue }
            if case .string(let name)? = v["series"], case .string(let day)? = v["day"] {
                if case .number(let x)? = v["value"] { series[name, default: [:]][day] = x } else { series[name, default: [:]][day] = .some(nil) }
            } else if v["rule"] == .string("gait_quality_explanation"), v["status"] == .string("firing"), case .string(let day)? = v["day"],
                day >= "2026-02-23", day <= "2026-03-01", case .string(let s)? = v["summary"]
            {
                explanationFirings.append(s)
            }
        }
        func days(_ from: String, _ n: Int) -> [String] {
            let start = CivilDate(parsing: Substring(from))!.dayNumber
            return (0..<n).map { CivilDate(dayNumber: start + Int32($0)).description }
        }
        let week = days("2026-02-23", 7), lastWeek = days("2026-02-16", 7), baseline = days("2026-01-01", 30)  // injury on day 31, 2026-01-31
        func mean(_ name: String, _ ds: [String]) -> Double? {
            let v = ds.compactMap { series[name]?[$0] ?? nil }
            return v.isEmpty ? nil : v.reduce(0, +) / Double(v.count)
        }
        let mph = 1 / 0.44704
        let speed = try #require(d.metrics.first { $0.series == "speed_p95" })
        // The series payload is rounded to 6 decimals, the digest computes on the engine's values.
        #expect(abs(speed.thisWeek.dailyMean! - mean("speed_p95", week)! * mph) < 1e-5)
        #expect(abs(speed.lastWeek.dailyMean! - mean("speed_p95", lastWeek)! * mph) < 1e-5)
        #expect(abs(speed.baseline! - mean("speed_p95", baseline)! * mph) < 1e-5)
        #expect(abs(speed.thisWeek.smoothedLast! - series["speed_7d"]!["2026-03-01"]!! * mph) < 1e-5)
        #expect(speed.thisWeek.daysWithData == week.filter { (series["speed_p95"]?[$0] ?? nil) != nil }.count)
        let smoothed: [String: Double?] = series["speed_7d"] ?? [:]
        var ys: [Double] = []
        for day in week { ys.append((smoothed[day] ?? nil)! * mph) }
        // x = 0…6 (mean 3, Σ(x-3)² = 28)
        var sxy = 0.0
        for (k, y) in ys.enumerated() { sxy += (Double(k) - 3) * y }
        let slope = sxy / 28
        #expect(abs(speed.trendPerWeek! - slope * 7) < 1e-4)
        let ds = try #require(d.metrics.first { $0.series == "double_support" })
        #expect(abs(ds.thisWeek.dailyMean! - mean("double_support", week)!) < 1e-4 && ds.lowerIsBetter && ds.unit.symbol == "%")
        // the heat wave slows Jamie while double support keeps improving: the explanation is quoted
        #expect(!explanationFirings.isEmpty && d.explanations == explanationFirings)
        #expect(d.annotations.contains { $0.kind == "heat_wave" })
        let device = week.compactMap { series["speed_samples_device"]?[$0] ?? nil }.reduce(0, +)
        #expect(d.conditions.first { $0.label == "device" }?.count == Int(device) && d.conditions.first { $0.label == "device" }?.share == 1)
    }

    /// The pages from recorded traffic: the weekly report (chosen by the `.html` name) and the
    /// panel, well-formed XHTML with one SVG chart or more, no script.
    @Test func pagesFromRecordedTraffic() throws {
        let traffic = Self.temp(".jsonl"), weekly = Self.temp(".html")
        defer { try? FileManager.default.removeItem(atPath: traffic); try? FileManager.default.removeItem(atPath: weekly) }
        let rec = try Self.run("mobility-sim", ["record", RepoPaths.root + "/simulator/scenarios/jamie-heat-wave.scenario", "-o", traffic])
        try #require(rec.status == 0, "\(rec.stderr)")
        let w = try Self.run(
            "mobilityctl", ["report", "--rules", RepoPaths.rules, "--traffic", traffic, "--user", "jamie-heat-wave", "--week", "2026-W09", "-o", weekly])
        try #require(w.status == 0, "\(w.stderr)")
        let page = try String(contentsOfFile: weekly, encoding: .utf8)
        #expect((try FileManager.default.attributesOfItem(atPath: weekly)[.posixPermissions] as? Int) == 0o600)
        let panel = try Self.run(
            "mobilityctl", ["report", "--rules", RepoPaths.rules, "--traffic", traffic, "--user", "jamie-heat-wave", "--page", "panel", "-o", "-"])
        try #require(panel.status == 0, "\(panel.stderr)")
        for html in [page, panel.stdout] {
            let doc = try XMLTree(html)
            #expect(!doc.all("svg").isEmpty)
            #expect(doc.all("script").isEmpty)
        }
        #expect(page.contains("2026-W09") && page.contains("jamie-heat-wave"))
    }

    /// A cohort's reports from one pass over its traffic (`--all-users`, or several `--user`):
    /// each user's file is the same bytes as that user's report made alone.
    @Test func aCohortsReportsFromOnePassEqualEachUsersReport() throws {
        let traffic = Self.temp(".jsonl"), dir = Self.temp("")
        var lines = Data()
        for name in ["jamie-heat-wave", "jamie-plateau"] {
            let one = Self.temp(".jsonl")
            let rec = try Self.run("mobility-sim", ["record", RepoPaths.root + "/simulator/scenarios/\(name).scenario", "-o", one])
            try #require(rec.status == 0, "\(rec.stderr)")
            lines += try Data(contentsOf: URL(fileURLWithPath: one))
        }
        try lines.write(to: URL(fileURLWithPath: traffic))
        for page in ["weekly", "panel"] {
            // The second pass finds the directory opened to others: it is made the owner's only again.
            if page == "panel" { chmod(dir, 0o755) }
            let all = try Self.run(
                "mobilityctl",
                ["report", "--rules", RepoPaths.rules, "--traffic", traffic, "--all-users", "--week", "2026-W09", "--page", page, "--format", "html", "-o", dir]
            )
            try #require(all.status == 0, "\(all.stderr)")
            #expect(all.stderr.contains("2 reports in \(dir)"), "\(all.stderr)")
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.contains(page) }.sorted() == [
                    "jamie-heat-wave.\(page).html", "jamie-plateau.\(page).html"
                ])
            #expect((try FileManager.default.attributesOfItem(atPath: dir)[.posixPermissions] as? Int) == 0o700)
            for user in ["jamie-heat-wave", "jamie-plateau"] {
                let alone = try Self.run(
                    "mobilityctl",
                    [
                        "report", "--rules", RepoPaths.rules, "--traffic", traffic, "--user", user, "--week", "2026-W09", "--page", page, "--format", "html",
                        "-o", "-"
                    ])
                try #require(alone.status == 0, "\(alone.stderr)")
                let file = try String(contentsOfFile: "\(dir)/\(user).\(page).html", encoding: .utf8)
                #expect(file == alone.stdout, "\(user) \(page)")
                #expect(file.contains(user))
            }
        }
        // A directory of another user's is refused, and left as it is.
        let theirs = Self.temp("")
        try FileManager.default.createDirectory(atPath: theirs, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let other: uid_t = geteuid() == 0 ? 65534 : 0
        if geteuid() == 0 { try #require(chown(theirs, other, other) == 0) }
        let target = geteuid() == 0 ? theirs : "/"
        let refused = try Self.run(
            "mobilityctl", ["report", "--rules", RepoPaths.rules, "--traffic", traffic, "--all-users", "--week", "2026-W09", "-o", target])
        #expect(refused.status == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("\(target) belongs to another user"), "\(refused.stderr)")
        if geteuid() == 0 {
            #expect((try FileManager.default.attributesOfItem(atPath: theirs)[.posixPermissions] as? Int) == 0o755)
            #expect(try FileManager.default.contentsOfDirectory(atPath: theirs).isEmpty)
        }
        // A symbolic link at the name is refused, not followed: its target keeps its mode and
        // gets no reports.
        let pointed = Self.temp("")
        try FileManager.default.createDirectory(atPath: pointed, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let link = Self.temp("")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: pointed)
        let linked = try Self.run(
            "mobilityctl", ["report", "--rules", RepoPaths.rules, "--traffic", traffic, "--all-users", "--week", "2026-W09", "-o", link])
        #expect(linked.status == 1, "\(linked.stderr)")
        #expect(linked.stderr.contains("\(link) is not a directory"), "\(linked.stderr)")
        #expect((try FileManager.default.attributesOfItem(atPath: pointed)[.posixPermissions] as? Int) == 0o755)
        #expect(try FileManager.default.contentsOfDirectory(atPath: pointed).isEmpty)

        let two = try Self.run(
            "mobilityctl", ["report", "--rules", RepoPaths.rules, "--traffic", traffic, "--user", "jamie-plateau", "--user", "nobody", "-o", dir + "/json"])
        #expect(two.status == 1, "a user without traffic fails the run, after the others' reports")
        #expect(two.stderr.contains("no traffic for user 'nobody'") && two.stderr.contains("1 report in \(dir)/json"), "\(two.stderr)")
        #expect(FileManager.default.fileExists(atPath: dir + "/json/jamie-plateau.weekly.json"))
    }

    /// A report file is written beside its name as a new file of the user's (0600 from its first
    /// byte) and renamed into place: a symbolic link already at that name is refused, its target
    /// left as it was.
    @Test func aLinkAtTheReportsPartialNameIsRefused() throws {
        let traffic = Self.temp(".jsonl"), dir = Self.temp("")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: traffic); try? FileManager.default.removeItem(atPath: dir) }
        let rec = try Self.run("mobility-sim", ["record", RepoPaths.root + "/simulator/scenarios/jamie-heat-wave.scenario", "-o", traffic])
        try #require(rec.status == 0, "\(rec.stderr)")
        let victim = dir + "/victim", out = dir + "/report.json"
        try Data("victim\n".utf8).write(to: URL(fileURLWithPath: victim))
        // The shell plants the link with its own process id, then becomes mobilityctl (same id).
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = [
            "-c",
            "ln -s \"$V\" \"$O.partial-$$\"; exec \"$CTL\" report --rules \"$R\" --traffic \"$T\" --user jamie-heat-wave --week 2026-W09 -o \"$O\""
        ]
        p.environment = ["V": victim, "O": out, "R": RepoPaths.rules, "T": traffic, "CTL": ChildProcess.product("mobilityctl"), "LANG": "C"]
        let err = Pipe()
        p.standardError = err
        try p.run()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 1, "\(stderr)")
        #expect(stderr.contains("mobilityctl report: cannot write \(out): \(out).partial-") && stderr.contains("already exists"), "\(stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "victim\n", "the link's target was written")
    }

    @Test func anAppleHealthExportThroughMobilitySimExport() throws {
        let traffic = Self.temp(".jsonl")
        defer { try? FileManager.default.removeItem(atPath: traffic) }
        let ex = try Self.run("mobility-sim", ["export", RepoPaths.root + "/Tests/SimulatorTests/Fixtures/export.xml", "--user", "ex", "-o", traffic])
        try #require(ex.status == 0, "\(ex.stderr)")
        let r = try Self.run("mobilityctl", ["report", "--rules", RepoPaths.rules, "--traffic", traffic, "--user", "ex", "-o", "-"])
        #expect(r.status == 0, "\(r.stderr)")
        let d = try WeeklyDigest.decode(Array(r.stdout.utf8)).get()
        #expect(d.user == "ex" && d.metrics.count == 2 && d.metrics[0].thisWeek.daysWithData > 0)
    }

    @Test(
        arguments: [
            (["--traffic", "t.jsonl", "--user", "u", "-o", "-"], 2, "--user and -o are required, and --rules with --traffic"),
            (["--rules", "R", "--traffic", "T", "--state", "/tmp", "--user", "u", "-o", "-"], 2, "give either --traffic (with --rules) or --state"),
            (["--rules", "R", "--user", "u", "-o", "-"], 2, "give either --traffic (with --rules) or --state"),
            (["--state", "/nonexistent/state", "--user", "u", "-o", "-"], 1, "/nonexistent/state holds no mobilityd state"),
            (["--rules", "R", "--traffic", "T", "--user", "jamie-heat-wave", "--page", "chart", "-o", "-"], 2, "unknown page 'chart'"),
            (["--rules", "R", "--traffic", "T", "--user", "jamie-heat-wave", "--week", "2026-W54", "-o", "-"], 2, "'2026-W54' is not an ISO week"),
            (
                ["--rules", "R", "--traffic", "T", "--user", "jamie-heat-wave", "--page", "panel", "--format", "json", "-o", "-"], 2,
                "the panel is a page: use --format html"
            ),
            (["--rules", "R", "--traffic", "T", "--user", "jamie-heat-wave", "--format", "pdf", "-o", "-"], 2, "unknown format 'pdf'"),
            (["--rules", "R", "--traffic", "T", "--user", "jamie-heat-wave", "--colour", "-o", "-"], 2, "unknown argument --colour"),
            (["--rules", "R", "--traffic", "T", "--user", "nobody", "-o", "-"], 1, "no traffic for user 'nobody'"),
            (["--rules", "R", "--traffic", "/nonexistent/t.jsonl", "--user", "u", "-o", "-"], 1, "cannot read /nonexistent/t.jsonl"),
            (["--rules", "R", "--traffic", "T", "--user"], 2, "--user needs a value"),
            (["--rules", "R", "--traffic", "T", "--all-users", "-o", "-"], 2, "a cohort's reports go to a directory: -o DIR"),
            (["--rules", "R", "--traffic", "T", "--all-users", "--user", "u", "-o", "/tmp"], 2, "give --user or --all-users, not both"),
            (["--rules", "R", "--traffic", "T", "--user", "u", "--user", "../u", "-o", "/tmp"], 2, "user '../u' is not 1-64 of")
        ] as [([String], Int32, String)])
    func badArgumentsAreRefusedWithAReason(args: [String], status: Int32, message: String) throws {
        let traffic = Self.temp(".jsonl")
        defer { try? FileManager.default.removeItem(atPath: traffic) }
        let rec = try Self.run("mobility-sim", ["record", RepoPaths.root + "/simulator/scenarios/jamie-heat-wave.scenario", "-o", traffic])
        try #require(rec.status == 0)
        let a = args.map { $0 == "R" ? RepoPaths.rules : $0 == "T" ? traffic : $0 }
        let r = try Self.run("mobilityctl", ["report"] + a)
        #expect(r.status == status, "\(r.stderr)")
        #expect(r.stderr.contains(message), "\(r.stderr)")
        #expect(r.stdout.isEmpty)
    }

    @Test func rulesWithoutAReportBlockAreRefused() throws {
        let dir = Self.temp("")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "series s = mean(walkingSpeed)\n".write(toFile: dir + "/a.rules", atomically: true, encoding: .utf8)
        try "".write(toFile: dir + "/t.jsonl", atomically: true, encoding: .utf8)
        let r = try Self.run("mobilityctl", ["report", "--rules", dir, "--traffic", dir + "/t.jsonl", "--user", "u", "-o", "-"])
        #expect(r.status == 1 && r.stderr.contains("the rules declare no report block"))
    }
}
