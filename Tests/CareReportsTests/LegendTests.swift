import CareReports
import Foundation
import MobilityModel
import Testing

/// Each chart's legend lists what that chart draws on its time axis (and the six-minute walk's kinds
/// of point), and only that: checked against
/// the parsed SVG of every shipped scenario's pages.
@Suite struct LegendTests {
    /// `(section class, legend entries, the section's chart)` of a page.
    func cards(_ page: String) throws -> [(String, [String], XMLTree.Element)] {
        try ["recovery-panel", "gait-quality", "six-minute-walk"].map { c in
            let section = try #require(try XMLTree(page).withClass(c).first)
            let svg = try #require(section.descendants.first { $0.name == "svg" && $0.classes.contains("chart") })
            let legend = try #require(section.descendants.first { $0.name == "ul" && $0.classes.contains("legend") })
            return (c, legend.children.filter { $0.name == "li" }.map { $0.allText.trimmingCharacters(in: .whitespaces) }, svg)
        }
    }

    func check(_ page: String, _ what: String) throws {
        for (c, entries, svg) in try cards(page) {
            let drawn = svg.descendants
            func has(_ cls: String) -> Bool { drawn.contains { $0.classes.contains(cls) } }
            func listed(_ prefix: String) -> [String] { entries.filter { $0.hasPrefix(prefix) } }
            let label = "\(what) \(c)"
            #expect(listed("grey: no data that day").count == (has("missing") ? 1 : 0), "\(label)")
            #expect(listed("clinical event").count == (has("clinical-event") ? 1 : 0), "\(label)")
            if let e = listed("clinical event: ").first {
                let kinds = drawn.filter { $0.classes.contains("clinical-event") }
                    .compactMap { $0.children.first { $0.name == "title" }?.allText.components(separatedBy: " on ").first }
                #expect(e == "clinical event: " + distinctInOrder(kinds).joined(separator: ", "), "\(label)")
            }
            #expect(listed("annotation").count == (has("annotation") || has("annotation-range") ? 1 : 0), "\(label)")
            for severity in ["critical", "warning", "info"] {
                let bands = drawn.filter { $0.classes.contains("alert-\(severity)") }
                let entry = listed("\(severity) alert")
                #expect(entry.count == (bands.isEmpty ? 0 : 1), "\(label) \(severity)")
                let active = bands.contains { $0.allText.contains("(active)") }
                #expect(entry.first.map { $0.hasSuffix("(arrow: still active)") == active } ?? true, "\(label) \(severity)")
            }
            #expect(listed("report week").count == (has("report-week") ? 1 : 0), "\(label)")
            if c == "six-minute-walk" {
                #expect(listed("clinic test").count == (has("clinic") ? 1 : 0), "\(label)")
                #expect(listed("watch estimate").count == (drawn.contains { $0.classes == ["watch"] } ? 1 : 0), "\(label)")
                #expect(listed("provisional watch estimate").count == (has("provisional") ? 1 : 0), "\(label)")
            }
        }
    }

    @Test(arguments: RenderedPagesTests.scenarios)
    func theLegendListsWhatTheChartDraws(scenario: String) throws {
        let (h, s) = try ScenarioHistory.load(scenario)
        let spec = ScenarioHistory.spec
        try check(ReportPage.panel(history: h, spec: spec), "\(scenario) panel")
        let digest = WeeklyDigest.make(history: h, spec: spec, week: ISOWeek(containing: RenderedPagesTests.weekDay(h, s)))
        try check(ReportPage.weekly(digest: digest, history: h, spec: spec), "\(scenario) weekly")
    }

    @Test func aQuietRecoveryListsNoAnnotationAndNoAlert() throws {
        // Jamie's normal recovery: an injury, no annotation, no alert, no missing day in the window.
        let (h, _) = try ScenarioHistory.load("jamie-normal")
        #expect(h.alerts.isEmpty && !h.timeline.contains { $0.category == .annotation })
        let (_, entries, _) = try #require(try cards(ReportPage.panel(history: h, spec: ScenarioHistory.spec)).first)
        #expect(entries.contains("clinical event: injury"))
        #expect(!entries.contains { $0.hasPrefix("annotation") || $0.contains("alert") || $0.hasPrefix("report week") })
    }

    @Test func alertsAreListedBySeverityAndActiveOnesSaySo() throws {
        var (h, _) = try ScenarioHistory.load("data-gap")
        let last = h.series.values.flatMap(\.keys).max()!
        h.alerts.append(AlertEpisode(id: "x", rule: "low_gait_speed", severity: .critical, firedDay: last - 5, endedDay: nil, headline: "still low"))
        let (_, entries, _) = try #require(try cards(ReportPage.panel(history: h, spec: ScenarioHistory.spec)).first)
        #expect(
            entries.filter { $0.contains(" alert, ") } == [
                "critical alert, from firing to its end (arrow: still active)",
                "warning alert, from firing to its end"
            ])
        try check(ReportPage.panel(history: h, spec: ScenarioHistory.spec), "data-gap with an active alert")
    }
}

/// The distinct kinds in order of first appearance.
private func distinctInOrder(_ kinds: [String]) -> [String] {
    var seen = Set<String>()
    return kinds.filter { seen.insert($0).inserted }
}
