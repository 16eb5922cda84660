import MobilityModel

/// A trend panel as a plot of a ``TimeChart``: daily values as points, the smoothed series as a
/// line broken at clinical events, the baseline as a dashed level.
enum TrendPlot {
    /// The plot of `panel` over `window`, and the sentence that describes it for `<desc>`.
    static func plot(_ history: UserHistory, _ panel: ReportSpec.TrendPanel, window: ClosedRange<DayNumber>, height: Double) -> (TimeChart.Plot, String) {
        let data = TrendSeries(history, panel, window: window)
        let unit = panel.displayUnit
        let plot = TimeChart.Plot(axisTitle: "\(panel.title) (\(unit.symbol))", range: data.valueRange, missing: data.missing, height: height) { m, x, v in
            let decimals = v.decimals + 1
            if let b = data.baseline {
                let y = v.y(b.value)
                m.element(
                    "line",
                    [
                        ("class", "baseline"), ("x1", NumberText.coord(x.left)), ("x2", NumberText.coord(x.left + x.width)),
                        ("y1", NumberText.coord(y)), ("y2", NumberText.coord(y)), ("stroke", "#555"), ("stroke-width", "1.2"),
                        ("stroke-dasharray", "6 3")
                    ])
                // In the plot's title row, right-aligned: never over the data.
                m.element(
                    "text",
                    [
                        ("class", "baseline-label"), ("x", NumberText.coord(x.left + x.width)), ("y", NumberText.coord(v.top - 5)),
                        ("text-anchor", "end"), ("fill", "#333"), ("font-size", "11")
                    ],
                    text: "baseline \(NumberText.fixed(b.value, decimals)) \(unit.symbol) (dashed)")
            }
            for seg in data.segments {
                var d = ""
                for (i, p) in seg.enumerated() { d += (i == 0 ? "M" : "L") + NumberText.coord(x.x(p.day)) + "," + NumberText.coord(v.y(p.value)) }
                if seg.count == 1 { d += "h0.1" }
                m.element(
                    "path",
                    [
                        ("class", "smoothed"), ("data-first-day", NumberText.iso(seg[0].day)),
                        ("data-last-day", NumberText.iso(seg[seg.count - 1].day)), ("d", d), ("fill", "none"),
                        ("stroke", "#0b3d73"), ("stroke-width", "2.2"), ("stroke-linejoin", "round"), ("stroke-linecap", "round")
                    ])
            }
            for p in data.points {
                m.open(
                    "circle",
                    [
                        ("class", "daily"), ("data-day", NumberText.iso(p.day)), ("cx", NumberText.coord(x.x(p.day))),
                        ("cy", NumberText.coord(v.y(p.value))), ("r", "2.4"), ("fill", "#4f86c6"), ("fill-opacity", "0.85")
                    ])
                m.element("title", text: "\(NumberText.iso(p.day)): \(NumberText.fixed(p.value, decimals)) \(unit.symbol)")
                m.close("circle")
            }
        }
        var desc =
            "\(panel.title) in \(unit.symbol), \(NumberText.iso(window.lowerBound)) to \(NumberText.iso(window.upperBound)): "
            + "daily values as dots on \(data.points.count) days, \(data.missing.count) days without data (shaded)"
        if panel.smoothed != nil { desc += "; the smoothed series as a line in \(data.segments.count) piece(s), broken at clinical events and gaps" }
        if let last = data.segments.last?.last { desc += ", last \(NumberText.fixed(last.value, 2)) \(unit.symbol) on \(NumberText.iso(last.day))" }
        if let b = data.baseline {
            desc +=
                "; baseline \(NumberText.fixed(b.value, 2)) \(unit.symbol), the mean of the \(panel.baselineDays ?? 0) days before the "
                + "\(NumberText.kind(b.before.kind)) on \(NumberText.iso(b.before.firstDay)) (dashed line)"
        }
        if panel.lowerIsBetter { desc += "; lower is better" }
        return (plot, desc + ".")
    }
}
