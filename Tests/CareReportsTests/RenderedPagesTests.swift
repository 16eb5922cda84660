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
        "jamie-plateau", "offline-late-sync", "traveller-dst", "uncalibrated-watch"
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

    @Test func headlessChromiumRendersAPageThatIsNotBlank() throws {
        let (h, s) = try ScenarioHistory.load("jamie-heat-wave")
        let digest = WeeklyDigest.make(history: h, spec: ScenarioHistory.spec, week: ISOWeek(containing: Self.weekDay(h, s)))
        let page = ReportPage.weekly(digest: digest, history: h, spec: ScenarioHistory.spec)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("care-reports-\(getpid())-\(UInt64.random(in: 0...UInt64.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: dir) }
        let html = dir.appendingPathComponent("page.html"), png = dir.appendingPathComponent("page.png")
        try page.write(to: html, atomically: true, encoding: .utf8)

        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = [
            "chromium-headless-shell", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--user-data-dir=" + dir.appendingPathComponent("profile").path,
            "--window-size=390,1200", "--screenshot=" + png.path, html.absoluteString
        ]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        let deadline = Date().addingTimeInterval(90)
        while p.isRunning && Date() < deadline { usleep(50_000) }  // poll the exit with a deadline
        if p.isRunning { p.terminate() }
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "chromium-headless-shell failed; scripts/install-deps.sh installs it")

        let image = try PNGImage(Array(try Data(contentsOf: png)))
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
}
