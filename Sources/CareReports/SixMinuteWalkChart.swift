import MobilityModel

/// Clinic versus watch six-minute walk (the talk's third idea): clinic tests as red squares,
/// watch estimates as green dots, provisional estimates hollow.
enum SixMinuteWalkChart {
    /// The chart's `<section>`, or nothing without a six-minute-walk panel.
    static func render(_ history: UserHistory, _ spec: ReportSpec, window: ClosedRange<DayNumber>, week: ClosedRange<DayNumber>?, into m: inout Markup) {
        guard let panel = spec.sixMinuteWalk else { return }
        let data = SixMinuteWalkSeries(history, panel, window: window)
        let unit = panel.displayUnit
        // Days without walking data at all: the speed panel's missing days, when there is one.
        let missing = spec.speed.map { TrendSeries(history, $0, window: window).missing } ?? []
        let plot = TimeChart.Plot(axisTitle: "Six-minute walk (\(unit.symbol))", range: data.valueRange, missing: missing, height: 130) { m, x, v in
            for w in data.watch {
                m.open(
                    "circle",
                    [
                        ("class", w.provisional ? "watch provisional" : "watch"), ("data-day", NumberText.iso(w.day)),
                        ("cx", NumberText.coord(x.x(w.day))), ("cy", NumberText.coord(v.y(w.value))), ("r", "4"),
                        ("fill", w.provisional ? "#ffffff" : "#2e7d32"), ("stroke", "#2e7d32"), ("stroke-width", "1.8")
                    ])
                m.element(
                    "title",
                    text: "\(NumberText.iso(w.day)): watch estimate \(NumberText.fixed(w.value, 0)) \(unit.symbol)"
                        + (w.provisional ? " (provisional: uncalibrated or capped)" : ""))
                m.close("circle")
            }
            for c in data.clinic {
                let cx = x.x(c.day), cy = v.y(c.value)
                m.open(
                    "rect",
                    [
                        ("class", "clinic"), ("data-day", NumberText.iso(c.day)), ("x", NumberText.coord(cx - 4.5)),
                        ("y", NumberText.coord(cy - 4.5)), ("width", "9"), ("height", "9"), ("fill", "#c62828")
                    ])
                m.element("title", text: "\(NumberText.iso(c.day)): clinic test \(NumberText.fixed(c.value, 0)) \(unit.symbol)")
                m.close("rect")
            }
        }
        let provisional = data.watch.filter(\.provisional).count
        let desc =
            "Six-minute walk distance in \(unit.symbol), \(NumberText.iso(window.lowerBound)) to \(NumberText.iso(window.upperBound)): "
            + "\(data.clinic.count) clinic tests (red squares), \(data.watch.count) watch estimates (green dots), \(provisional) of them "
            + "provisional (hollow)"
            + (data.clinic.last.map { "; latest clinic test \(NumberText.fixed($0.value, 0)) \(unit.symbol) on \(NumberText.iso($0.day))" } ?? "")
            + (data.watch.last.map { "; latest watch estimate \(NumberText.fixed($0.value, 0)) \(unit.symbol) on \(NumberText.iso($0.day))" } ?? "") + "."
        m.open("section", [("class", "chart-card six-minute-walk")])
        m.element("h2", text: "Clinic vs watch: six-minute walk")
        let chart = TimeChart(
            title: "Clinic tests and watch estimates of the six-minute walk of \(XMLText.bounded(history.user, limit: 80))",
            desc: desc, window: window, plots: [plot], history: history, week: week)
        m.append(chart.render())
        // Only the kinds of point the chart draws (the desc says how many of each there are).
        var entries: [(Legend.Symbol, String)] = []
        if !data.clinic.isEmpty { entries.append((.square("#c62828"), "clinic test (\(panel.clinic))")) }
        if data.watch.contains(where: { !$0.provisional }) { entries.append((.dot("#2e7d32"), "watch estimate (\(panel.watch))")) }
        if provisional > 0 {
            entries.append((.hollowDot("#2e7d32"), "provisional watch estimate" + (panel.provisionalRule.map { " (\($0) active)" } ?? "")))
        }
        Legend.render(entries + Legend.timeline(chart.shown()), into: &m)
        m.close("section")
    }
}
