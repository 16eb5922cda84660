import MobilityModel

/// The gait-quality card (the talk's second idea): the double-support panel under the speed panel
/// on one time axis, with the explanation sentences above it when there are any.
enum GaitQualityCard {
    /// The card's `<section>`, or nothing without a double-support panel.
    static func render(
        _ history: UserHistory, _ spec: ReportSpec, window: ClosedRange<DayNumber>, week: ClosedRange<DayNumber>?,
        explanations: [String], into m: inout Markup
    ) {
        guard let quality = spec.doubleSupport else { return }
        m.open("section", [("class", "chart-card gait-quality")])
        m.element("h2", text: "Gait quality: \(quality.title.lowercased())" + (spec.speed.map { " under \($0.title.lowercased())" } ?? ""))
        for sentence in explanations.prefix(10) {
            m.element("p", [("class", "explanation")], text: XMLText.bounded(sentence))
        }
        var plots: [TimeChart.Plot] = [], descs: [String] = []
        if let speed = spec.speed {
            let (p, d) = TrendPlot.plot(history, speed, window: window, height: 105)
            plots.append(p)
            descs.append(d)
        }
        let (p, d) = TrendPlot.plot(history, quality, window: window, height: 105)
        plots.append(p)
        descs.append(d)
        let chart = TimeChart(
            title: "Gait-quality card: \(quality.title) under \(spec.speed?.title ?? "") of \(XMLText.bounded(history.user, limit: 80))",
            desc: descs.joined(separator: " "), window: window, plots: plots, history: history, week: week)
        m.append(chart.render())
        Legend.render(
            [(.dot("#4f86c6"), "daily value"), (.line("#0b3d73"), "smoothed series"), (.dashed("#555"), "pre-injury baseline")]
                + Legend.timeline(chart.shown()), into: &m)
        if quality.lowerIsBetter { m.element("p", [("class", "note")], text: "Lower \(quality.title.lowercased()) is better.") }
        m.close("section")
    }

    /// What the explanation rules said while they fired (``AlertEpisode/firedHeadline``, as of
    /// the window's last day) in the episodes that overlap the window, latest first.
    static func explanations(_ history: UserHistory, _ spec: ReportSpec, window: ClosedRange<DayNumber>) -> [String] {
        let rules = Set(spec.explanations)
        var seen = Set<String>()
        return history.alerts.filter { rules.contains($0.rule) && $0.firedDay <= window.upperBound && ($0.endedDay ?? .max) >= window.lowerBound }
            .sorted { ($0.firedDay, $0.id) > ($1.firedDay, $1.id) }
            .map { e in e.asOf(window.upperBound).firedHeadline ?? e.headline }
            .filter { seen.insert($0).inserted }
    }
}
