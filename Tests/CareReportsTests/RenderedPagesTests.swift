import CareReports
import Foundation
import MobilityModel
import Simulator
import Testing

/// The pages of the shipped scenarios as a person sees them: built from each scenario's history,
/// parsed, written to `RENDER_REPORTS_DIR` when it is set (scripts/render-reports.sh turns them into
/// PNGs), and one of them rendered by headless Chromium and checked not to be blank.
@Suite struct RenderedPagesTests {
    static let scenarios = [
        "clinic-disagreement", "data-gap", "double-support-regression", "jamie-heat-wave", "jamie-normal",
        "jamie-plateau", "jamie-plateau-long", "late-injury", "offline-late-sync", "traveller-dst", "uncalibrated-watch"
    ]

    /// The week a scenario's weekly page shows: the heat wave's middle, else the latest alert's
    /// firing, else the last full week.
    static func weekDay(_ h: UserHistory, _ s: Scenario) -> DayNumber {
        let day0 = s.timeline.start.dayNumber - 1
        if let hw = s.timeline.heatWave { return day0 + DayNumber((hw.lowerBound + hw.upperBound) / 2) }
        if let a = h.alerts.filter({ $0.rule != "uncalibrated_6mwd" }).map(\.firedDay).max() { return a }
        return day0 + DayNumber(s.timeline.days) - 7
    }

    @Test func everyShippedScenarioHasWellFormedPages() throws {
        let out = ProcessInfo.processInfo.environment["RENDER_REPORTS_DIR"]
        for name in Self.scenarios {
            let (h, s) = try ScenarioHistory.load(name)
            let spec = ScenarioHistory.spec
            let panel = ReportPage.panel(history: h, spec: spec)
            let digest = WeeklyDigest.make(history: h, spec: spec, week: ISOWeek(containing: Self.weekDay(h, s)))
            let weekly = ReportPage.weekly(digest: digest, history: h, spec: spec)
            for page in [panel, weekly] {
                let t = try XMLTree(page)
                #expect(t.all("svg").filter { $0.classes.contains("chart") }.count == 3, "\(name)")
                #expect(page.utf8.count < 200_000, "\(name): \(page.utf8.count) bytes")
            }
            if let out {
                try panel.write(toFile: out + "/\(name).panel.html", atomically: true, encoding: .utf8)
                try weekly.write(toFile: out + "/\(name).weekly.html", atomically: true, encoding: .utf8)
            }
        }
    }

    /// Runs headless Chromium on `page` (written to a private directory) with a window `width`
    /// by `height` and `arguments` (`--screenshot=OUT` names OUT in the directory); returns what it
    /// wrote to standard output and the bytes of OUT, if any.
    static func chromium(_ page: String, width: Int, height: Int, _ arguments: [String], output: String? = nil) throws -> (stdout: String, file: [UInt8]?) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("care-reports-\(getpid())-\(UInt64.random(in: 0...UInt64.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: dir) }
        let html = dir.appendingPathComponent("page.html"), stdout = dir.appendingPathComponent("stdout")
        try page.write(to: html, atomically: true, encoding: .utf8)
        guard FileManager.default.createFile(atPath: stdout.path, contents: nil) else { throw CocoaError(.fileWriteUnknown) }
        let out = try FileHandle(forWritingTo: stdout)
        defer { try? out.close() }

        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments =
            [
                "chromium-headless-shell", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                "--user-data-dir=" + dir.appendingPathComponent("profile").path,
                "--window-size=\(width),\(height)"
            ] + arguments.map { $0.replacingOccurrences(of: "=OUT", with: "=" + dir.path + "/") } + [html.absoluteString]
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let deadline = Date().addingTimeInterval(90)
        while p.isRunning && Date() < deadline { usleep(50_000) }  // poll the exit with a deadline
        if p.isRunning { p.terminate() }
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "chromium-headless-shell failed; scripts/install-deps.sh installs it")
        let file = try output.map { Array(try Data(contentsOf: dir.appendingPathComponent($0))) }
        return (String(decoding: try Data(contentsOf: stdout), as: UTF8.self), file)
    }

    @Test func headlessChromiumRendersAPageThatIsNotBlank() throws {
        let (h, s) = try ScenarioHistory.load("jamie-heat-wave")
        let digest = WeeklyDigest.make(history: h, spec: ScenarioHistory.spec, week: ISOWeek(containing: Self.weekDay(h, s)))
        let page = ReportPage.weekly(digest: digest, history: h, spec: ScenarioHistory.spec)
        let png = try #require(try Self.chromium(page, width: 390, height: 1200, ["--screenshot=OUTpage.png"], output: "page.png").file)

        let image = try PNGImage(png)
        #expect(image.width == 390 && image.height == 1200)
        // Drawn, not blank: many colours (text anti-aliasing, the charts' fills), and a good share of
        // the pixels not white.
        #expect(image.distinctColours > 50)
        var inked = 0
        for y in stride(from: 0, to: image.height, by: 2) { for x in stride(from: 0, to: image.width, by: 2) where image.rgb(x, y) != 0xFFFFFF { inked += 1 } }
        #expect(Double(inked) / Double(image.width * image.height / 4) > 0.03)
        // The page fits the phone's width: the right margin column is white (no cut-off content).
        #expect((0..<image.height).allSatisfy { image.rgb(image.width - 1, $0) == 0xFFFFFF })
    }

    /// The layout of the alerts table's first row as Chromium lays it out: a copy of the page with
    /// a script (the page itself has none) that measures it, read back from `--dump-dom`.
    struct AlertRowLayout {
        /// The viewport's width and the page's scrolling width, in CSS px.
        var viewport: Int, scrollWidth: Int
        /// The table's width.
        var tableWidth: Int
        /// The lines the rule name takes.
        var ruleLines: Int
        /// Each cell's left, top and width.
        var cells: [(left: Int, top: Int, width: Int)]
    }

    static func alertRowLayout(_ page: String, width: Int) throws -> AlertRowLayout {
        let script = """
            <script>
            var t = Array.from(document.querySelectorAll("table")).find(function (t) { return t.caption.textContent == "Alerts of the week" });
            var row = t.tBodies[0].rows[0], range = document.createRange();
            range.selectNodeContents(row.cells[0]);
            var tops = new Set(Array.from(range.getClientRects()).map(function (r) { return Math.round(r.top) }));
            var cells = Array.from(row.cells).map(function (c) { var r = c.getBoundingClientRect(); return [r.left, r.top, r.width].map(Math.round).join(",") });
            var out = document.createElement("pre");
            out.id = "layout";
            out.textContent = [document.documentElement.clientWidth, document.documentElement.scrollWidth, Math.round(t.getBoundingClientRect().width), tops.size].join(" ") + " " + cells.join(" ");
            document.body.appendChild(out);
            </script></body>
            """
        let dom = try chromium(page.replacingOccurrences(of: "</body>", with: script), width: width, height: 1600, ["--dump-dom"]).stdout
        let start = try #require(dom.range(of: "<pre id=\"layout\">")), end = try #require(dom.range(of: "</pre>", range: start.upperBound..<dom.endIndex))
        let f = dom[start.upperBound..<end.lowerBound].split(separator: " ")
        let n = f.prefix(4).compactMap { Int($0) }
        try #require(n.count == 4 && f.count > 4, "\(f)")
        let cells = f.dropFirst(4).map { $0.split(separator: ",").compactMap { Int($0) } }
        try #require(cells.allSatisfy { $0.count == 3 }, "\(f)")
        return AlertRowLayout(viewport: n[0], scrollWidth: n[1], tableWidth: n[2], ruleLines: n[3], cells: cells.map { ($0[0], $0[1], $0[2]) })
    }

    @Test(arguments: ["jamie-plateau", "jamie-heat-wave"])
    func onAPhoneTheAlertSummaryIsAFullWidthLineUnderTheAlertsCells(_ name: String) throws {
        // The weeks of stalled_recovery (a long sentence) and gait_quality_explanation (a long name).
        let (h, s) = try ScenarioHistory.load(name)
        let digest = WeeklyDigest.make(history: h, spec: ScenarioHistory.spec, week: ISOWeek(containing: Self.weekDay(h, s)))
        #expect(["stalled_recovery", "gait_quality_explanation"].contains(digest.alerts.first?.episode.rule))
        let page = ReportPage.weekly(digest: digest, history: h, spec: ScenarioHistory.spec)

        let phone = try Self.alertRowLayout(page, width: 390)
        #expect(phone.scrollWidth <= phone.viewport, "the page is wider than the phone")
        let head = phone.cells.dropLast(), summary = try #require(phone.cells.last)
        #expect(head.count == 5 && head.allSatisfy { $0.top == head[0].top })
        // Before: the five columns squeezed to about 20 px, a letter or two, beside the summary.
        #expect(head.allSatisfy { $0.width >= 55 }, "\(head)")
        #expect(summary.top > head[0].top && summary.width * 100 >= phone.tableWidth * 95, "\(summary), table \(phone.tableWidth)")
        #expect(phone.ruleLines <= 2, "the rule name breaks at its underscores, not at every letter")

        let desk = try Self.alertRowLayout(page, width: 1000)
        #expect(desk.cells.count == 6 && desk.cells.allSatisfy { $0.top == desk.cells[0].top })  // one row: the summary is a column
        #expect(zip(desk.cells, desk.cells.dropFirst()).allSatisfy { $0.left < $1.left })
        #expect(desk.ruleLines == 1)
    }
}
