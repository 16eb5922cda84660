import MobilityModel

/// One SVG chart on a day axis: lanes of annotations and alert bands on top, the clinical events'
/// row, one or more stacked plots sharing the axis (each with its value axis, missing days shaded,
/// annotation ranges and the report week behind the data), and the date axis at the bottom.
struct TimeChart {
    /// One plot of the stack.
    struct Plot {
        /// Its value axis' title, with the unit, e.g. `Walking speed (mph)`.
        var axisTitle: String
        /// The range of the values it draws (display unit); nil when it draws none.
        var range: ClosedRange<Double>?
        /// Days without data, shaded.
        var missing: [DayNumber]
        /// Its height.
        var height: Double
        /// Draws the data on the scales.
        var draw: (inout Markup, DayScale, ValueScale) -> Void
    }

    /// The SVG's geometry (user units of the viewBox).
    enum Layout {
        static let width = ChartGeometry.width
        static let plotLeft = ChartGeometry.plotLeft
        static let plotWidth = ChartGeometry.plotWidth
        /// A lane's height.
        static let lane = 16.0
        /// Lanes of annotations and of alerts at most.
        static let maxLanes = 3
    }

    var title: String
    var desc: String
    var window: ClosedRange<DayNumber>
    var plots: [Plot]
    var history: UserHistory
    /// The report week, highlighted.
    var week: ClosedRange<DayNumber>?

    /// What the chart draws on its time axis besides the data, for its legend.
    struct Shown {
        /// A plot shades a day without data.
        var missingDays = false
        /// The kinds of the clinical events marked, in time order, each once.
        var clinicalKinds: [String] = []
        /// The kinds of the annotations drawn, in time order, each once.
        var annotationKinds: [String] = []
        /// The severities of the alert bands drawn (most severe first), and whether one of them is still active.
        var alerts: [(Severity, open: Bool)] = []
        /// The report week is outlined.
        var reportWeek = false
    }

    private var scale: DayScale { DayScale(first: window.lowerBound, last: window.upperBound, left: Layout.plotLeft, width: Layout.plotWidth) }

    private func clinicalEvents(_ scale: DayScale) -> [TimelineEvent] {
        plots.isEmpty ? [] : history.timeline.filter { $0.category == .clinical && scale.contains($0.firstDay) }
    }

    /// What ``render()`` draws besides the data (the same selections, so the legend cannot disagree with the chart).
    func shown() -> Shown {
        let scale = self.scale
        func once(_ kinds: [String]) -> [String] {
            var seen = Set<String>()
            return kinds.filter { seen.insert($0).inserted }
        }
        var s = Shown()
        s.missingDays = plots.contains { !$0.missing.isEmpty }
        s.clinicalKinds = once(clinicalEvents(scale).map(\.kind))
        s.annotationKinds = once(history.timeline.filter { $0.category == .annotation && $0.lastDay >= scale.first && $0.firstDay <= scale.last }.map(\.kind))
        let drawn = TimelineLanes(alertItems(scale), scale: scale, maxLanes: Layout.maxLanes).lanes.joined().map(\.item)
        for severity in [Severity.critical, .warning, .info] {
            let bands = drawn.filter { $0.key == severity.rawValue }
            if !bands.isEmpty { s.alerts.append((severity, bands.contains(where: \.open))) }
        }
        s.reportWeek = !plots.isEmpty && week.map { $0.upperBound >= scale.first && $0.lowerBound <= scale.last } == true
        return s
    }

    /// The fill and ink of an alert band of a severity.
    static func alertColours(_ s: Severity) -> (fill: String, ink: String) {
        switch s {
        case .critical: ("#f4c7c3", "#7f1d16")
        case .warning: ("#f9d9a8", "#6b3d00")
        case .info: ("#d5dde6", "#2b3a4a")
        }
    }

    /// The SVG element.
    func render() -> Markup {
        let scale = self.scale
        let annotations = TimelineLanes(annotationItems(scale), scale: scale, maxLanes: Layout.maxLanes)
        let alerts = TimelineLanes(alertItems(scale), scale: scale, maxLanes: Layout.maxLanes)
        let clinical = clinicalEvents(scale)
        var y = 4.0
        let annotationTop = y
        y += Double(annotations.lanes.count) * Layout.lane
        let alertTop = y
        y += Double(alerts.lanes.count) * Layout.lane
        let eventRow = y
        if !clinical.isEmpty || week != nil { y += 15 }
        var plotTops: [Double] = []
        for p in plots {
            y += 19
            plotTops.append(y)
            y += p.height + 8
        }
        let axisY = y - 8
        let height = axisY + 24

        var m = Markup(capacity: 16_384)
        m.open(
            "svg",
            [
                ("xmlns", "http://www.w3.org/2000/svg"), ("viewBox", "0 0 \(Int(Layout.width)) \(Int(height.rounded(.up)))"),
                ("role", "img"), ("class", "chart"), ("data-first-day", NumberText.iso(scale.first)),
                ("data-last-day", NumberText.iso(scale.last)), ("font-family", "DejaVu Sans, Helvetica, Arial, sans-serif"),
                ("font-size", "12")
            ])
        m.element("title", text: title)
        m.element("desc", text: desc)

        lanes(annotations, top: annotationTop, into: &m)
        lanes(alerts, top: alertTop, into: &m)

        for (p, top) in zip(plots, plotTops) {
            let values = ValueScale(minimum: p.range?.lowerBound ?? 0, maximum: p.range?.upperBound ?? 1, top: top, height: p.height)
            background(p, scale, values, firstPlotTop: plotTops[0], eventRowText: eventRow + 10, into: &m)
            if p.range == nil {
                m.element(
                    "text",
                    [
                        ("x", NumberText.coord(scale.left + scale.width / 2)), ("y", NumberText.coord(top + p.height / 2)),
                        ("text-anchor", "middle"), ("fill", "#555")
                    ], text: "no data in this range")
            } else {
                p.draw(&m, scale, values)
            }
        }

        if !plotTops.isEmpty {
            for e in clinical {
                let x = scale.x(e.firstDay)
                m.open(
                    "g",
                    [("class", "clinical-event"), ("data-day", NumberText.iso(e.firstDay))]
                        + (e.entered.map { [("data-entered-by", XMLText.bounded($0.by, limit: 100))] } ?? []))
                m.element(
                    "title",
                    text: "\(NumberText.kind(e.kind)) on \(NumberText.iso(e.firstDay))" + (e.note.map { ": " + XMLText.bounded($0) } ?? "")
                        + (NumberText.entered(e).map { "; " + $0 } ?? ""))
                for (p, top) in zip(plots, plotTops) {  // within the plots, not over their titles
                    m.element(
                        "line",
                        [
                            ("class", "clinical-marker"), ("x1", NumberText.coord(x)), ("x2", NumberText.coord(x)),
                            ("y1", NumberText.coord(top)), ("y2", NumberText.coord(top + p.height)),
                            ("stroke", "#6a1b9a"), ("stroke-width", "1.5")
                        ])
                }
                // A staff entry says whose it is where the marker is read, not only in its tooltip.
                let label = "\(NumberText.kind(e.kind)) \(NumberText.short(e.firstDay))" + (e.entered.map { " · " + XMLText.bounded($0.by, limit: 24) } ?? "")
                let w = Double(label.count) * 7.4
                let lx = min(max(x, scale.left + w / 2), scale.left + scale.width - w / 2)
                m.element(
                    "text",
                    [
                        ("x", NumberText.coord(lx)), ("y", NumberText.coord(eventRow + 10)), ("text-anchor", "middle"),
                        ("fill", "#6a1b9a"), ("font-weight", "bold")
                    ], text: label)
                m.close("g")
            }
        }
        dateAxis(scale, y: axisY, into: &m)
        m.close("svg")
        return m
    }

    // MARK: lanes

    private func annotationItems(_ scale: DayScale) -> [TimelineLanes.Item] {
        history.timeline.filter { $0.category == .annotation && $0.lastDay >= scale.first && $0.firstDay <= scale.last }.map { a in
            let range = a.firstDay == a.lastDay ? NumberText.iso(a.firstDay) : "\(NumberText.iso(a.firstDay)) to \(NumberText.iso(a.lastDay))"
            return .init(
                first: scale.clamp(a.firstDay), last: scale.clamp(a.lastDay),
                label: XMLText.bounded(NumberText.kind(a.kind), limit: 40) + (a.entered.map { " · " + XMLText.bounded($0.by, limit: 24) } ?? ""),
                detail: "\(NumberText.kind(a.kind)), \(range)" + (a.note.map { ": " + XMLText.bounded($0) } ?? "")
                    + (NumberText.entered(a).map { "; " + $0 } ?? ""),
                fill: "#f3dfa2", ink: "#5b4300", cssClass: a.entered == nil ? "annotation" : "annotation staff-entry")
        }
    }

    private func alertItems(_ scale: DayScale) -> [TimelineLanes.Item] {
        history.alerts.filter { $0.firedDay <= scale.last && ($0.endedDay.map { $0 > scale.first } ?? true) }.map { e in
            let last = e.endedDay.map { scale.clamp(max($0 - 1, e.firedDay)) } ?? scale.last
            let colours = Self.alertColours(e.severity)
            let state =
                e.withdrawnDay.map { "withdrawn (late data showed it did not hold) \(NumberText.iso($0))" }
                ?? e.endedDay.map { "\(e.expired ? "expired (no longer watched)" : "resolved") \(NumberText.iso($0))" } ?? "active"
            return .init(
                first: scale.clamp(e.firedDay), last: last,
                label: XMLText.bounded(e.rule.replacingUnderscores(), limit: 40)
                    + (e.withdrawnDay != nil ? " (withdrawn)" : e.endedDay == nil ? " (active)" : e.expired ? " (expired)" : ""),
                detail: "\(e.rule) (\(e.severity.rawValue)), active since \(NumberText.iso(e.sinceDay)), fired \(NumberText.iso(e.firedDay)): "
                    + XMLText.bounded(e.firedHeadline ?? e.headline) + (e.endedDay == nil ? "" : "; \(state): " + XMLText.bounded(e.headline)),
                fill: colours.0, ink: colours.1, cssClass: "alert alert-\(e.severity.rawValue)", open: e.endedDay == nil,
                key: e.severity.rawValue)
        }
    }

    private func lanes(_ l: TimelineLanes, top: Double, into m: inout Markup) {
        let scale = DayScale(first: window.lowerBound, last: window.upperBound, left: Layout.plotLeft, width: Layout.plotWidth)
        for (i, lane) in l.lanes.enumerated() {
            let y = top + Double(i) * Layout.lane
            for (item, labelX, anchorEnd) in lane {
                let x0 = scale.slotStart(item.first), x1 = scale.slotStart(item.last + 1)
                m.open("g", [("class", item.cssClass), ("data-first-day", NumberText.iso(item.first)), ("data-last-day", NumberText.iso(item.last))])
                m.element("title", text: item.detail)
                m.element(
                    "rect",
                    [
                        ("x", NumberText.coord(x0)), ("y", NumberText.coord(y)), ("width", NumberText.coord(max(x1 - x0, 2))),
                        ("height", "13"), ("rx", "2"), ("fill", item.fill), ("stroke", item.ink), ("stroke-width", "0.6")
                    ])
                if item.open {
                    m.element(
                        "path",
                        [
                            ("d", "M\(NumberText.coord(x1 - 5)),\(NumberText.coord(y + 1))l5,5l-5,5"), ("fill", "none"),
                            ("stroke", item.ink)
                        ])
                }
                m.element(
                    "text",
                    [("x", NumberText.coord(labelX)), ("y", NumberText.coord(y + 10.5)), ("font-size", "11"), ("fill", item.ink)]
                        + (anchorEnd ? [("text-anchor", "end")] : []), text: item.label)
                m.close("g")
            }
        }
    }

    // MARK: plot background

    private func background(_ p: Plot, _ x: DayScale, _ v: ValueScale, firstPlotTop: Double, eventRowText: Double, into m: inout Markup) {
        let top = v.top, h = v.height
        m.element(
            "text",
            [
                ("x", NumberText.coord(x.left)), ("y", NumberText.coord(top - 5)), ("font-weight", "bold"), ("fill", "#222"),
                ("class", "axis-title")
            ], text: p.axisTitle)
        m.element(
            "rect",
            [
                ("x", NumberText.coord(x.left)), ("y", NumberText.coord(top)), ("width", NumberText.coord(x.width)),
                ("height", NumberText.coord(h)), ("fill", "#ffffff"), ("stroke", "#888"), ("stroke-width", "0.8")
            ])
        for a in history.timeline where a.category == .annotation && a.lastDay >= x.first && a.firstDay <= x.last {
            let x0 = x.slotStart(x.clamp(a.firstDay)), x1 = x.slotStart(x.clamp(a.lastDay) + 1)
            m.element(
                "rect",
                [
                    ("class", "annotation-range"), ("x", NumberText.coord(x0)), ("y", NumberText.coord(top)),
                    ("width", NumberText.coord(x1 - x0)), ("height", NumberText.coord(h)), ("fill", "#f3dfa2"), ("fill-opacity", "0.35")
                ])
        }
        if let week, week.upperBound >= x.first, week.lowerBound <= x.last {
            let x0 = x.slotStart(x.clamp(week.lowerBound)), x1 = x.slotStart(x.clamp(week.upperBound) + 1)
            // Outlined, not filled: a fill would mix with the annotation and no-data shades.
            m.element(
                "rect",
                [
                    ("class", "report-week"), ("x", NumberText.coord(x0)), ("y", NumberText.coord(top)),
                    ("width", NumberText.coord(x1 - x0)), ("height", NumberText.coord(h)), ("fill", "none"), ("stroke", "#1f4e8c"),
                    ("stroke-width", "1.2"), ("stroke-dasharray", "3 2")
                ])
            m.element(
                "rect",
                [
                    ("x", NumberText.coord(x0)), ("y", NumberText.coord(top)), ("width", NumberText.coord(x1 - x0)), ("height", "4"),
                    ("fill", "#1f4e8c")
                ])
            if top == firstPlotTop {
                m.element(
                    "text",
                    [
                        ("class", "report-week-label"), ("x", NumberText.coord(x1 - 1)), ("y", NumberText.coord(eventRowText)),
                        ("text-anchor", "end"), ("fill", "#1f4e8c"), ("font-size", "11")
                    ], text: "report week ▾")
            }
        }
        var runs: [ClosedRange<DayNumber>] = []
        for d in p.missing {
            if let last = runs.last, last.upperBound + 1 == d { runs[runs.count - 1] = last.lowerBound...d } else { runs.append(d...d) }
        }
        for r in runs {
            let x0 = x.slotStart(r.lowerBound), x1 = x.slotStart(r.upperBound + 1)
            m.open("g", [("class", "missing"), ("data-first-day", NumberText.iso(r.lowerBound)), ("data-last-day", NumberText.iso(r.upperBound))])
            m.element(
                "title",
                text: r.count == 1
                    ? "no data on \(NumberText.iso(r.lowerBound))"
                    : "no data from \(NumberText.iso(r.lowerBound)) to \(NumberText.iso(r.upperBound))")
            m.element(
                "rect",
                [
                    ("x", NumberText.coord(x0)), ("y", NumberText.coord(top)), ("width", NumberText.coord(x1 - x0)),
                    ("height", NumberText.coord(h)), ("fill", "#bdbdbd"), ("fill-opacity", "0.45")
                ])
            if x1 - x0 >= 40 {
                m.element(
                    "text",
                    [
                        ("x", NumberText.coord((x0 + x1) / 2)), ("y", NumberText.coord(top + h - 5)), ("text-anchor", "middle"),
                        ("font-size", "9.5"), ("fill", "#444")
                    ], text: "no data")
            }
            m.close("g")
        }
        for t in v.ticks {
            let y = v.y(t)
            if t > v.lo && t < v.hi {
                m.element(
                    "line",
                    [
                        ("x1", NumberText.coord(x.left)), ("x2", NumberText.coord(x.left + x.width)), ("y1", NumberText.coord(y)),
                        ("y2", NumberText.coord(y)), ("stroke", "#e0e0e0"), ("stroke-width", "0.7")
                    ])
            }
            m.element(
                "text",
                [
                    ("class", "value-label"), ("x", NumberText.coord(x.left - 4)), ("y", NumberText.coord(y + 3.5)),
                    ("text-anchor", "end"), ("fill", "#333")
                ], text: NumberText.fixed(t, v.decimals))
        }
    }

    // MARK: date axis

    private func dateAxis(_ x: DayScale, y: Double, into m: inout Markup) {
        var monday = x.first
        while NumberText.weekday(monday) != 0 { monday += 1 }
        let every = max(1, Int((56 / (7 * x.step)).rounded(.up)))
        var i = 0
        var d = monday
        var tick = "", labels: [(Double, String)] = []
        while d <= x.last {
            let px = x.slotStart(d)
            tick += "M\(NumberText.coord(px)),\(NumberText.coord(y))v\(i % every == 0 ? 5 : 3)"
            if i % every == 0, px - 18 >= 0, px + 18 <= Layout.width { labels.append((px, NumberText.short(d))) }
            i += 1
            d += 7
        }
        if !tick.isEmpty { m.element("path", [("d", tick), ("stroke", "#555"), ("fill", "none")]) }
        for (px, s) in labels {
            m.element(
                "text",
                [
                    ("class", "date-label"), ("x", NumberText.coord(px)), ("y", NumberText.coord(y + 17)), ("text-anchor", "middle"),
                    ("fill", "#333")
                ], text: s)
        }
    }
}
