import CareReports
import Foundation
import MobilityModel
import RuleEngine
import Testing

/// The pages parsed as XML and checked against values computed here from the history: one point
/// per day with data, none on a missing day, the injury marker at the scale's x, the units, the
/// broken line, the hollow provisional points, the escaping, the bounds.
@Suite struct ReportPageTests {
    let spec = ScenarioHistory.spec

    /// The chart SVGs of a page (not the legends' symbols), in page order.
    func charts(_ t: XMLTree) -> [XMLTree.Element] { t.all("svg").filter { $0.classes.contains("chart") } }

    /// The chart inside the section with class `c`.
    func chart(_ t: XMLTree, in c: String) throws -> XMLTree.Element {
        let section = try #require(t.withClass(c).first)
        return try #require(section.descendants.first { $0.name == "svg" && $0.classes.contains("chart") })
    }

    func day(_ s: String?) -> DayNumber? { s.flatMap { CivilDate(parsing: Substring($0))?.dayNumber } }

    /// The x of `d` on a window, computed from the documented geometry, not by the renderer's scale.
    func expectedX(_ d: DayNumber, first: DayNumber, last: DayNumber) -> Double {
        ChartGeometry.plotLeft + (Double(d - first) + 0.5) * ChartGeometry.plotWidth / Double(last - first + 1)
    }

    @Test func thePanelPageIsWellFormedSelfContainedXHTML() throws {
        let (h, _) = try ScenarioHistory.load("jamie-plateau")
        let page = ReportPage.panel(history: h, spec: spec)
        let t = try XMLTree(page)
        #expect(t.root.name == "html" && t.root.namespace == "http://www.w3.org/1999/xhtml")
        let svgs = charts(t)
        #expect(svgs.count == 3)
        for s in svgs {
            #expect(s.namespace == "http://www.w3.org/2000/svg")
            #expect(s.attributes["viewBox"]?.hasPrefix("0 0 440 ") == true)
            let title = try #require(s.children.first { $0.name == "title" })
            let desc = try #require(s.children.first { $0.name == "desc" })
            #expect(title.allText.contains("jamie-plateau"))
            #expect(desc.allText.count > 40)
        }
        // No script, no external asset, no event handler.
        let all = t.root.descendants
        #expect(!all.contains { ["script", "link", "img", "iframe", "object", "use", "image", "foreignObject"].contains($0.name) })
        #expect(!all.contains { e in e.attributes.keys.contains { $0.hasPrefix("on") || $0 == "href" || $0 == "src" || $0.hasSuffix(":href") } })
        #expect(!page.contains("url("))
        #expect(try #require(t.all("style").first).allText.contains("@media print"))
        // Deterministic.
        #expect(ReportPage.panel(history: h, spec: spec) == page)
    }

    @Test func oneDailyPointPerDayWithDataAtTheScalesX() throws {
        let (h, _) = try ScenarioHistory.load("data-gap")
        let t = try XMLTree(ReportPage.panel(history: h, spec: spec))
        let svg = try chart(t, in: "recovery-panel")
        let first = try #require(day(svg.attributes["data-first-day"])), last = try #require(day(svg.attributes["data-last-day"]))
        // No clinical event: the recorded range's last 91 days (all 90 here).
        let recorded = h.series.values.flatMap(\.keys)
        #expect(first == recorded.min() && last == recorded.max())
        let daily = h.series["speed_p95"]!
        let withData = Set((first...last).filter { (daily[$0] ?? nil) != nil })
        let points = svg.descendants.filter { $0.classes.contains("daily") }
        #expect(points.count == withData.count)
        #expect(Set(points.compactMap { day($0.attributes["data-day"]) }) == withData)
        for p in points {
            let d = try #require(day(p.attributes["data-day"]))
            #expect(abs(try #require(p.number("cx")) - expectedX(d, first: first, last: last)) < 0.06)
        }
    }

    @Test func missingDaysAreShadedAndHaveNoPoint() throws {
        let (h, s) = try ScenarioHistory.load("data-gap")
        let t = try XMLTree(ReportPage.panel(history: h, spec: spec))
        let gap = Set((s.timeline.start.dayNumber + 39)...(s.timeline.start.dayNumber + 44))  // scenario days 40 to 45
        for c in ["recovery-panel", "six-minute-walk"] {
            let svg = try chart(t, in: c)
            var shaded = Set<DayNumber>()
            for g in svg.descendants where g.classes.contains("missing") {
                shaded.formUnion(try #require(day(g.attributes["data-first-day"]))...(try #require(day(g.attributes["data-last-day"]))))
            }
            #expect(shaded.isSuperset(of: gap), "\(c)")
            let daily = h.series["speed_p95"]!
            #expect(shaded == Set(shaded.filter { (daily[$0] ?? nil) == nil }), "\(c): only days without a value are shaded")
            let pointDays = Set(svg.descendants.filter { $0.classes.contains("daily") }.compactMap { day($0.attributes["data-day"]) })
            #expect(pointDays.isDisjoint(with: shaded))
        }
        // The gait-quality card has two time axes; both shade the gap.
        let card = try chart(t, in: "gait-quality")
        #expect(card.descendants.filter { $0.classes.contains("missing") && day($0.attributes["data-first-day"]) == gap.min() }.count == 2)
    }

    @Test func theInjuryMarkerIsAtTheXOfTheInjuryDay() throws {
        let (h, s) = try ScenarioHistory.load("jamie-plateau")
        let injury = s.timeline.start.dayNumber - 1 + DayNumber(s.timeline.injuryDay!)
        let recorded = h.series.values.flatMap(\.keys)
        let first = max(injury - 30, recorded.min()!), last = min(injury + 60, recorded.max()!)
        let t = try XMLTree(ReportPage.panel(history: h, spec: spec))
        for c in ["recovery-panel", "gait-quality", "six-minute-walk"] {
            let svg = try chart(t, in: c)
            #expect(day(svg.attributes["data-first-day"]) == first && day(svg.attributes["data-last-day"]) == last)
            let marker = try #require(svg.descendants.first { $0.classes.contains("clinical-marker") })
            #expect(day(marker.parent?.attributes["data-day"]) == injury)
            #expect(abs(try #require(marker.number("x1")) - expectedX(injury, first: first, last: last)) < 0.06)
            #expect(marker.number("x1") == marker.number("x2"))
        }
    }

    /// Entries that care staff entered say whose they are on the chart (the marker's and the
    /// band's label) and when (their tooltips); a gateway's entry says neither.
    @Test func staffEntriesNameWhoEnteredThem() throws {
        let (base, s) = try ScenarioHistory.load("jamie-plateau")
        let injury = s.timeline.start.dayNumber - 1 + DayNumber(s.timeline.injuryDay!)
        var h = base
        let at = Timestamp(seconds: Int64(injury + 2) * 86_400 + 9 * 3600 + 12 * 60)
        h.timeline = h.timeline.map { e in
            var e = e
            if e.category == .clinical { e.entered = EntryAttribution(by: "nurse.kim", team: "physio-north", at: at) }
            return e
        }
        h.record(
            TimelineEvent(
                id: "ill", category: .annotation, kind: "illness", firstDay: injury + 5, lastDay: injury + 8,
                entered: EntryAttribution(by: "dr.lee <x>", team: "", at: at)))
        h.record(TimelineEvent(id: "hw", category: .annotation, kind: "heat_wave", firstDay: injury + 20, lastDay: injury + 22))
        let t = try XMLTree(ReportPage.panel(history: h, spec: spec))
        let svg = try chart(t, in: "recovery-panel")
        let marker = try #require(svg.descendants.first { $0.classes.contains("clinical-event") })
        #expect(marker.attributes["data-entered-by"] == "nurse.kim")
        #expect(marker.allText.contains("entered by nurse.kim (physio-north) on \(CivilDate(dayNumber: injury + 2)) at 09:12 UTC"), "\(marker.allText)")
        #expect(marker.allText.contains("injury \(NumberTextProbe.short(injury)) · nurse.kim"), "\(marker.allText)")
        let bands = svg.descendants.filter { $0.classes.contains("annotation") }
        let staff = try #require(bands.first { $0.classes.contains("staff-entry") })
        #expect(staff.allText.contains("illness · dr.lee <x>") && staff.allText.contains("entered by dr.lee <x> on "), "\(staff.allText)")
        let gateway = try #require(bands.first { $0.allText.contains("heat wave") })
        #expect(!gateway.classes.contains("staff-entry") && !gateway.allText.contains("entered by"))
    }

    @Test func axisLabelsAreInTheDisplayUnit() throws {
        let (h, _) = try ScenarioHistory.load("jamie-normal")
        func labels(_ s: ReportSpec) throws -> (String, [Double]) {
            let svg = try chart(try XMLTree(ReportPage.panel(history: h, spec: s)), in: "recovery-panel")
            let title = try #require(svg.descendants.first { $0.classes.contains("axis-title") }).allText
            return (title, svg.descendants.filter { $0.classes.contains("value-label") }.compactMap { Double($0.allText) })
        }
        let values = h.series["speed_p95"]!.values.compactMap { $0 }
        let (mphTitle, mph) = try labels(spec)
        #expect(mphTitle == "Walking speed (mph)")
        // The ticks bracket the values converted to mph (1 mph = 0.44704 m/s), not the m/s values.
        #expect(try #require(mph.min()) <= values.min()! / 0.44704 && mph.max()! >= values.max()! / 0.44704)
        #expect(mph.max()! > values.max()! * 1.5)
        var metric = spec
        metric.speed?.displayUnit = DisplayUnit(symbol: "m/s", factor: 1)
        let (msTitle, ms) = try labels(metric)
        #expect(msTitle == "Walking speed (m/s)")
        #expect(ms.min()! <= values.min()! && ms.max()! >= values.max()! && ms.max()! < values.max()! * 1.5)
    }

    @Test func theSmoothedLineIsBrokenAtTheInjury() throws {
        // Every day has a smoothed value, so the only break is the injury.
        let injury: DayNumber = 20_500
        var h = UserHistory(user: "u")
        for d in (injury - 40)...(injury + 40) {
            h.series["speed_p95", default: [:]][d] = 1.2
            h.series["speed_7d", default: [:]][d] = d < injury ? 1.3 : 0.8
        }
        let spec = ReportSpec(
            speed: .init(
                title: "Walking speed", daily: "speed_p95", smoothed: "speed_7d", baselineDays: 30,
                displayUnit: DisplayUnit(symbol: "m/s", factor: 1)))
        func segments(_ h: UserHistory) throws -> [XMLTree.Element] {
            try chart(try XMLTree(ReportPage.panel(history: h, spec: spec)), in: "recovery-panel").descendants.filter { $0.classes.contains("smoothed") }
        }
        #expect(try segments(h).count == 1)
        h.timeline = [TimelineEvent(id: "i", category: .clinical, kind: "injury", firstDay: injury, lastDay: injury)]
        let two = try segments(h)
        #expect(two.count == 2)
        #expect(day(two[0].attributes["data-first-day"]) == injury - 30 && day(two[0].attributes["data-last-day"]) == injury - 1)
        #expect(day(two[1].attributes["data-first-day"]) == injury && day(two[1].attributes["data-last-day"]) == injury + 40)
        // Each segment is one path: one move, then lines.
        #expect(two.allSatisfy { $0.attributes["d"]!.filter { $0 == "M" }.count == 1 })
        // The shipped plateau scenario: the line stops before the injury and starts again after it.
        let (jamie, s) = try ScenarioHistory.load("jamie-plateau")
        let jamieInjury = s.timeline.start.dayNumber - 1 + DayNumber(s.timeline.injuryDay!)
        let paths = try chart(try XMLTree(ReportPage.panel(history: jamie, spec: ScenarioHistory.spec)), in: "recovery-panel")
            .descendants.filter { $0.classes.contains("smoothed") }
        #expect(paths.count == 2)
        #expect(day(paths[0].attributes["data-last-day"])! < jamieInjury && day(paths[1].attributes["data-first-day"])! >= jamieInjury)
    }

    @Test func theBaselineIsTheMeanOfTheDaysBeforeTheInjury() throws {
        let (h, s) = try ScenarioHistory.load("jamie-plateau")
        let injury = s.timeline.start.dayNumber - 1 + DayNumber(s.timeline.injuryDay!)
        let before = ((injury - 30)..<injury).compactMap { h.series["speed_p95"]![$0] ?? nil }
        let mph = before.reduce(0, +) / Double(before.count) / 0.44704
        let svg = try chart(try XMLTree(ReportPage.panel(history: h, spec: spec)), in: "recovery-panel")
        let label = try #require(svg.descendants.first { $0.classes.contains("baseline-label") }).allText
        let shown = try #require(Double(label.split(separator: " ")[1]))
        #expect(abs(shown - mph) < 0.006)
        #expect(label.hasSuffix(" mph (dashed)"))
    }

    @Test func provisionalWatchEstimatesAreHollowAndClinicTestsRedSquares() throws {
        let (h, _) = try ScenarioHistory.load("uncalibrated-watch")
        let episodes = h.alerts.filter { $0.rule == "uncalibrated_6mwd" }
        #expect(!episodes.isEmpty)
        let svg = try chart(try XMLTree(ReportPage.panel(history: h, spec: spec)), in: "six-minute-walk")
        let watch = svg.descendants.filter { $0.classes.contains("watch") }
        #expect(watch.count == h.series["six_minute_walk_watch"]!.values.compactMap { $0 }.count)
        var hollow = 0
        for w in watch {
            let d = try #require(day(w.attributes["data-day"]))
            let provisional = episodes.contains { d >= $0.firedDay && d < ($0.endedDay ?? .max) }
            #expect(w.classes.contains("provisional") == provisional)
            #expect(w.attributes["fill"] == (provisional ? "#ffffff" : "#2e7d32"))
            #expect(w.attributes["stroke"] == "#2e7d32")
            if provisional { hollow += 1 }
        }
        #expect(hollow == 3)  // the weekly estimates of days 3, 10 and 17 (uncalibrated until day 21)
        let (clinic, _) = try ScenarioHistory.load("clinic-disagreement")
        let csvg = try chart(try XMLTree(ReportPage.panel(history: clinic, spec: spec)), in: "six-minute-walk")
        let squares = csvg.descendants.filter { $0.classes.contains("clinic") }
        #expect(squares.count == 1 && squares[0].name == "rect" && squares[0].attributes["fill"] == "#c62828")
    }

    @Test func alertsAreBandsFromFiringToResolvedOrTheRightEdge() throws {
        var (h, _) = try ScenarioHistory.load("data-gap")
        let gap = try #require(h.alerts.first { $0.rule == "data_gap" })
        let resolved = try #require(gap.endedDay)
        let last = h.series.values.flatMap(\.keys).max()!
        h.alerts.append(AlertEpisode(id: "x", rule: "low_gait_speed", severity: .critical, firedDay: last - 5, endedDay: nil, headline: "still low"))
        let svg = try chart(try XMLTree(ReportPage.panel(history: h, spec: spec)), in: "recovery-panel")
        let bands = svg.descendants.filter { $0.classes.contains("alert") }
        let g = try #require(bands.first { $0.classes.contains("alert-warning") || $0.allText.contains("data gap") })
        #expect(day(g.attributes["data-first-day"]) == gap.firedDay && day(g.attributes["data-last-day"]) == resolved - 1)
        let active = try #require(bands.first { $0.classes.contains("alert-critical") })
        #expect(day(active.attributes["data-first-day"]) == last - 5 && day(active.attributes["data-last-day"]) == last)
        #expect(active.allText.contains("(active)"))
    }

    @Test func userSuppliedTextIsEscaped() throws {
        let user = "<script>alert('x')</script>&\"u\""
        let note = "pain & fatigue <script>alert(1)</script> ]]> \u{1}"
        var h = UserHistory(user: user)
        for d: DayNumber in 20_000...20_070 { h.series["speed_p95", default: [:]][d] = 1.1 }
        h.timeline = [
            TimelineEvent(id: "a", category: .annotation, kind: "pain<b>", firstDay: 20_010, lastDay: 20_012, note: note),
            TimelineEvent(id: "i", category: .clinical, kind: "injury", firstDay: 20_020, lastDay: 20_020, note: note)
        ]
        h.alerts = [AlertEpisode(id: "e", rule: "r<&>", severity: .warning, firedDay: 20_030, endedDay: nil, headline: "speed < 0.8 & falling")]
        let digest = WeeklyDigest(
            user: user, week: ISOWeek(year: 2024, week: 40), firstDay: 20_002, lastDay: 20_008,
            alerts: [.init(episode: h.alerts[0], state: .active)], annotations: h.timeline, explanations: ["<i>x</i> & y"])
        for page in [ReportPage.panel(history: h, spec: spec), ReportPage.weekly(digest: digest, history: h, spec: spec)] {
            #expect(!page.contains("<script") && !page.contains("<b>") && !page.contains("<i>") && !page.contains("\u{1}"))
            let t = try XMLTree(page)
            #expect(t.all("script").isEmpty && t.all("b").isEmpty && t.all("i").isEmpty)
            #expect(try #require(t.all("title").first).allText.contains(user))  // round trip: the parser gives the text back
            #expect(t.root.allText.contains("pain & fatigue <script>alert(1)</script> ]]>"))
        }
        let weekly = try XMLTree(ReportPage.weekly(digest: digest, history: h, spec: spec))
        #expect(weekly.all("td").contains { $0.allText == "speed < 0.8 & falling" })
        #expect(weekly.all("p").contains { $0.allText == "<i>x</i> & y" })
    }

    @Test func theAlertsTableMarksItsCellsForThePhoneLayout() throws {
        // On a phone the style sheet lays `table.alerts` out as a grid: the summary (class `summary`)
        // on its own full-width line under the rule, severity and days; the rule name breaks after
        // its underscores (`<wbr/>`). RenderedPagesTests checks what Chromium makes of it.
        let summary = "Walking speed dipped: its 7-day mean of 0.95 m/s is 0.08 m/s below its best of the last two weeks"
        let episode = AlertEpisode(id: "e", rule: "gait_quality_explanation", severity: .info, firedDay: 20_004, endedDay: nil, headline: summary)
        let digest = WeeklyDigest(
            user: "u", week: ISOWeek(year: 2024, week: 40), firstDay: 20_002, lastDay: 20_008, alerts: [.init(episode: episode, state: .fired)])
        let page = ReportPage.weekly(digest: digest, history: UserHistory(user: "u"), spec: spec)
        let t = try XMLTree(page)
        let table = try #require(t.all("table").first { $0.children.first?.allText == "Alerts of the week" })
        #expect(table.classes == ["alerts"])
        let heads = table.descendants.filter { $0.name == "th" && $0.attributes["scope"] == "col" }
        #expect(heads.map { $0.attributes["class"] ?? "" } == ["rule", "", "", "day", "ended", "summary"])
        let row = try #require(table.descendants.first { $0.name == "tr" && $0.parent?.name == "tbody" })
        #expect(row.children.map { $0.attributes["class"] ?? "" } == ["rule", "", "", "day", "ended", "summary"])
        #expect(row.children.first?.allText == "gait_quality_explanation")
        #expect(row.children.first?.children.filter { $0.name == "wbr" }.count == 2)
        #expect(row.children.last?.allText == summary)
        let style = try #require(t.all("style").first).allText
        let phone = try #require(style.range(of: "@media (max-width:480px){")).upperBound
        let query = style[phone...].prefix { $0 != "@" }
        #expect(query.contains("table.alerts tr{display:grid;"))
        #expect(query.contains("table.alerts .summary,table.alerts .empty{grid-column:1/-1}"))
        // No alert: one full-width cell says so.
        let none = WeeklyDigest(user: "u", week: ISOWeek(year: 2024, week: 40), firstDay: 20_002, lastDay: 20_008)
        let empty = try #require(
            try XMLTree(ReportPage.weekly(digest: none, history: UserHistory(user: "u"), spec: spec)).all("table").first {
                $0.classes.contains("alerts")
            })
        let cells = empty.descendants.filter { ($0.name == "td" || $0.name == "th") && $0.parent?.parent?.name == "tbody" }
        #expect(cells.count == 1 && cells[0].attributes["colspan"] == "6" && cells[0].classes == ["empty"])
        #expect(cells[0].allText == "No alert fired, was active or ended")
    }

    @Test func theWeeklyPageHoldsTheDigestAndTheThreeChartsWithTheWeek() throws {
        // The heat-wave week (2026-W09, Monday 23 February), its digest by WeeklyDigest.make; the
        // numbers checked here are worked out from the engine's published series points.
        let (h, s, out) = try ScenarioHistory.replay("jamie-heat-wave")
        let week = ISOWeek(containing: ScenarioHistory.day(s, 60))
        #expect(week.description == "2026-W09")
        let digest = WeeklyDigest.make(history: h, spec: spec, week: week)
        let t = try XMLTree(ReportPage.weekly(digest: digest, history: h, spec: spec))
        #expect(charts(t).count == 3)
        for c in charts(t) {
            let w = try #require(c.descendants.first { $0.classes.contains("report-week") })
            #expect(
                abs(
                    try #require(w.number("x"))
                        - (expectedX(
                            week.monday, first: self.day(c.attributes["data-first-day"])!,
                            last: self.day(c.attributes["data-last-day"])!) - ChartGeometry.plotWidth / Double(56) / 2)) < 0.1)
            #expect(self.day(c.attributes["data-last-day"]) == week.sunday)
        }
        // Published values (m/s, %), as the series topic carries them.
        var published: [String: [DayNumber: Double]] = [:]
        for case .series(let p) in out { if let v = p.value { published[p.name, default: [:]][p.day.dayNumber] = v } }
        func mean(_ name: String, _ days: some Sequence<DayNumber>) -> Double {
            let v = days.compactMap { published[name]?[$0] }
            return v.reduce(0, +) / Double(v.count)
        }
        let injury = ScenarioHistory.day(s, s.timeline.injuryDay!)
        let cells = t.all("td").map(\.allText)
        #expect(cells.contains("\(fixed(mean("speed_p95", week.monday...week.sunday) / 0.44704, 2)) mph"))
        #expect(cells.contains("\(fixed(mean("speed_p95", (injury - 30)..<injury) / 0.44704, 2)) mph"))
        // Double support in % from the rule's `unit %`: the published percentages, not the SI fractions.
        let ds = mean("double_support", week.monday...week.sunday)
        #expect(ds > 20 && ds < 40)
        #expect(cells.contains("\(fixed(ds, 1)) %"))
        #expect(t.all("caption").map(\.allText).contains("Alerts of the week"))
        #expect(t.root.allText.contains("heat wave"))
        // The rule gait_quality_explanation's sentence, in the digest's words and on the gait-quality card.
        let fired = try #require(
            out.lazy.compactMap { o -> AlertTransition? in
                if case .alert(let a) = o, a.rule == "gait_quality_explanation", a.status == .firing { return a } else { return nil }
            }.first)
        #expect(week.monday...week.sunday ~= fired.day.dayNumber)
        #expect(fired.headline.hasSuffix("but double support keeps improving"))
        #expect(t.withClass("explanation").map(\.allText) == [fired.headline, fired.headline])
    }

    /// `v` with `n` decimals, by Foundation's formatter (not the pages' NumberText).
    func fixed(_ v: Double, _ n: Int) -> String { String(format: "%.\(n)f", v) }

    @Test func valuesAreSIAndShownInTheReportBlocksUnits() throws {
        // The history holds SI values (28 % as 0.28); the shipped report block says `unit %` and
        // `unit mph`, so the pages show the published percentages and miles per hour.
        #expect(spec.doubleSupport?.displayUnit == DisplayUnit(symbol: "%", factor: 100))
        #expect(spec.speed?.displayUnit.symbol == "mph")
        let (h, _, out) = try ScenarioHistory.replay("jamie-plateau")
        var published: [DayNumber: Double] = [:]
        for case .series(let p) in out where p.name == "double_support" { if let v = p.value { published[p.day.dayNumber] = v } }
        #expect(published.values.allSatisfy { $0 > 10 && $0 < 60 })
        for (d, v) in published { #expect(abs((h.series["double_support"]![d]!)! - v / 100) < 1e-12) }
        let card = try chart(try XMLTree(ReportPage.panel(history: h, spec: spec)), in: "gait-quality")
        #expect(card.descendants.filter { $0.classes.contains("axis-title") }.map(\.allText) == ["Walking speed (mph)", "Double support (%)"])
        // The double-support dots (the second plot's) carry the published percentages in their titles.
        let dots = card.descendants.filter { $0.classes.contains("daily") && $0.allText.hasSuffix(" %") }
        #expect(!dots.isEmpty)
        for dot in dots {
            let d = try #require(day(dot.attributes["data-day"]))
            let text = dot.allText.split(separator: " ")[1]
            let decimals = text.split(separator: ".").dropFirst().first?.count ?? 0
            #expect(abs(try #require(Double(text)) - published[d]!) <= 0.5 * pow(10, -Double(decimals)) + 1e-9, "\(dot.allText)")
        }
    }

    /// A plateau followed past the 60-day recovery: no week after the stall fired reads as if
    /// nothing were wrong. The stall's episode ends as expired (never resolved), in the week of
    /// recovery day 61, and every week from its firing to the end has an active recovery alert.
    @Test func aPlateauPastTheRecoveryWindowNeverReadsResolved() throws {
        let (h, s) = try ScenarioHistory.load("jamie-plateau-long")
        let stall = try #require(h.alerts.first { $0.rule == "stalled_recovery" })
        #expect(stall.expired && stall.endedDay == ScenarioHistory.day(s, 92))
        let deficit = try #require(h.alerts.first { $0.rule == "persistent_deficit" })
        #expect(deficit.firedDay == ScenarioHistory.day(s, 92) && deficit.endedDay == nil)
        let last = ScenarioHistory.day(s, 129)
        var week = ISOWeek(containing: stall.firedDay)
        while week.sunday <= last {
            let d = WeeklyDigest.make(history: h, spec: spec, week: week)
            let recovery = d.alerts.filter { ["stalled_recovery", "persistent_deficit"].contains($0.episode.rule) }
            #expect(!recovery.contains { $0.state == .resolved }, "\(week)")
            #expect(recovery.contains { $0.state != .expired && $0.state != .resolved }, "\(week): no active recovery alert")
            let page = ReportPage.weekly(digest: d, history: h, spec: spec)
            #expect(!page.contains("No alert fired"), "\(week)")
            if week == ISOWeek(containing: stall.endedDay!) {
                #expect(recovery.map { "\($0.episode.rule) \($0.state)" }.sorted() == ["persistent_deficit fired", "stalled_recovery expired"])
                #expect(try XMLTree(page).all("td").contains { $0.allText == "expired " + CivilDate(dayNumber: stall.endedDay!).description })
            }
            week = ISOWeek(containing: week.sunday + 1)
        }
    }

    /// An injury entered nine days late: the double-support alert it explains fired before it was
    /// known and was withdrawn when it came. The pages say so (a band labelled withdrawn, the
    /// weekly table's end), and the weekly JSON keeps it through a round trip.
    @Test func aWithdrawnAlertReadsWithdrawnOnThePages() throws {
        let (h, s) = try ScenarioHistory.load("late-injury")
        let ds = try #require(h.alerts.first { $0.rule == "double_support_regression" })
        #expect(ds.withdrawnDay == ScenarioHistory.day(s, 39) && ds.endedDay == ds.withdrawnDay)
        let panel = ReportPage.panel(history: h, spec: spec)
        // Its band's label says withdrawn (shortened to fit beside the band, the tooltip whole).
        let bands = try XMLTree(panel).withClass("alert").filter { g in
            g.children.contains { $0.name == "title" && $0.allText.hasPrefix("double_support_regression (") }
        }
        #expect(!bands.isEmpty)
        for band in bands {
            let label = band.children.first { $0.name == "text" }?.allText ?? ""
            #expect(label.hasPrefix("double supp") && label.hasSuffix(" (withdrawn)"), "\(label)")
            #expect(band.children.contains { $0.name == "title" && $0.allText.contains("withdrawn (late data showed it did not hold)") })
        }
        #expect(!panel.contains("double support regression (active)"))
        let d = WeeklyDigest.make(history: h, spec: spec, week: ISOWeek(containing: ds.withdrawnDay!))
        let row = try #require(d.alerts.first { $0.episode.rule == "double_support_regression" })
        #expect(row.state == .withdrawn)
        let page = ReportPage.weekly(digest: d, history: h, spec: spec)
        #expect(try XMLTree(page).all("td").contains { $0.allText == "withdrawn " + CivilDate(dayNumber: ds.withdrawnDay!).description })
        let back = try WeeklyDigest.decode(Array(d.json.utf8)).get()
        #expect(back.alerts.first { $0.episode.rule == "double_support_regression" }?.episode.withdrawnDay == ds.withdrawnDay)
        // The stall is the on-time one's, untouched.
        #expect(h.alerts.first { $0.rule == "stalled_recovery" }?.withdrawnDay == nil)
    }

    @Test func anEndedAlertSaysHowItEndedAndItsBandWhatHeldWhileItFired() throws {
        // The clinic test leaves the week: the disagreement expires, and its end says so in plain
        // words (before, the resolution's text read "Clinic six-minute walk unknown differs from
        // the watch estimate 470 m by unknown"). The week it fired quotes its firing; the week it
        // ended, its end; the band holds both.
        func transitions(_ out: [EngineOutput], _ rule: String) -> [AlertTransition] {
            out.compactMap { if case .alert(let a) = $0, a.rule == rule { return a } else { return nil } }
        }
        let (h, _, out) = try ScenarioHistory.replay("clinic-disagreement")
        let disagreement = transitions(out, "six_minute_walk_disagreement")
        let fired = try #require(disagreement.first { $0.status == .firing }), ended = try #require(disagreement.last { $0.status.isEnded })
        #expect(ended.status == .expired && ended.headline == "Six-minute walks no longer compared: clinic none in the last 7 days, watch 470 m")
        for t in disagreement { #expect(!t.headline.contains("unknown") && !t.details.contains("unknown"), "\(t.headline) | \(t.details)") }
        let firedWeek = ISOWeek(containing: fired.day.dayNumber), endWeek = ISOWeek(containing: ended.day.dayNumber)
        #expect(firedWeek != endWeek)
        let weekly = ReportPage.weekly(digest: WeeklyDigest.make(history: h, spec: spec, week: firedWeek), history: h, spec: spec)
        #expect(try XMLTree(weekly).all("td").contains { $0.allText == fired.headline })
        #expect(!(try XMLTree(weekly).all("td").contains { $0.allText == ended.headline }))
        let later = ReportPage.weekly(digest: WeeklyDigest.make(history: h, spec: spec, week: endWeek), history: h, spec: spec)
        #expect(try XMLTree(later).all("td").contains { $0.allText == ended.headline })
        let panel = ReportPage.panel(history: h, spec: spec)
        let bands = try XMLTree(panel).withClass("alert").filter { $0.allText.contains("six_minute_walk_disagreement") }
        #expect(!bands.isEmpty && bands.allSatisfy { $0.allText.contains(fired.headline) && $0.allText.contains(ended.headline) })
        // The gait-quality explanation of the heat wave resolved with other numbers: the card quotes the firing.
        let (hw, _, hwOut) = try ScenarioHistory.replay("jamie-heat-wave")
        let explanation = transitions(hwOut, "gait_quality_explanation")
        let said = try #require(explanation.last { $0.status == .firing }), over = try #require(explanation.last { $0.status == .resolved })
        #expect(said.headline != over.headline)
        let card = try #require(try XMLTree(ReportPage.panel(history: hw, spec: spec)).withClass("gait-quality").first)
        #expect(card.descendants.filter { $0.classes.contains("explanation") }.map(\.allText) == [said.headline])
    }

    @Test func aLongHistoryDrawsAtMostTheBoundedWindow() throws {
        var h = UserHistory(user: "long")
        for d: DayNumber in 10_000..<13_000 { h.series["speed_p95", default: [:]][d] = 1.0 + Double(d % 7) / 100 }
        for i in 0..<2000 {
            h.timeline.append(
                TimelineEvent(
                    id: "a\(i)", category: .annotation, kind: "note", firstDay: 10_000 + DayNumber(i), lastDay: 10_000 + DayNumber(i),
                    note: String(repeating: "n", count: 5000)))
        }
        let page = ReportPage.panel(history: h, spec: spec)
        let t = try XMLTree(page)
        let svg = try chart(t, in: "recovery-panel")
        // Without a clinical event, the recorded range's last 91 days (30 + 60 + the event's day).
        #expect(svg.descendants.filter { $0.classes.contains("daily") }.count == 91)
        #expect(day(svg.attributes["data-last-day"]) == 12_999)
        #expect(svg.descendants.filter { $0.classes.contains("annotation") }.count <= 3 * 60)
        // Each annotation draws a range per plot, lanes hold a few, notes are cut to 600 characters.
        #expect(page.utf8.count < 400_000)
    }
}

/// The chart's short date (`Feb 1`), as the marker label writes it.
enum NumberTextProbe {
    static func short(_ d: DayNumber) -> String {
        let c = CivilDate(dayNumber: d)
        return ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][c.month - 1] + " " + String(c.day)
    }
}
