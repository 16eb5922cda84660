import MobilityModel

/// The recovery panel (the talk's first app idea): the speed panel's daily values, its smoothed
/// line broken at the injury, the pre-injury baseline and the injury day, over the window.
enum RecoveryPanel {
    /// The panel's `<section>`, or nothing when the spec declares no speed panel.
    static func render(_ history: UserHistory, _ spec: ReportSpec, window: ClosedRange<DayNumber>, week: ClosedRange<DayNumber>?, into m: inout Markup) {
        guard let panel = spec.speed else { return }
        let (plot, desc) = TrendPlot.plot(history, panel, window: window, height: 150)
        m.open("section", [("class", "chart-card recovery-panel")])
        m.element("h2", text: "Recovery: \(panel.title.lowercased())")
        let chart = TimeChart(
            title: "Recovery panel: \(panel.title) of \(XMLText.bounded(history.user, limit: 80))", desc: desc,
            window: window, plots: [plot], history: history, week: week)
        m.append(chart.render())
        Legend.render(
            [(.dot("#4f86c6"), "daily value (\(panel.daily))")]
                + (panel.smoothed.map { [(.line("#0b3d73"), "\($0), broken at clinical events")] } ?? [])
                + (panel.baselineDays.map { [(.dashed("#555"), "baseline: mean of the \($0) days before the latest clinical event")] } ?? [])
                + Legend.timeline(chart.shown()), into: &m)
        m.close("section")
    }
}
