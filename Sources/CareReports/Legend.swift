/// A chart's legend in HTML under the SVG: each entry a small symbol (shape, not colour alone)
/// and words, so it wraps on a phone and reads in print.
enum Legend {
    /// A legend symbol.
    enum Symbol {
        case dot(String), hollowDot(String), square(String), line(String), dashed(String), band(String), outline(String), marker(String)
    }

    /// `<ul class="legend">` of `(symbol, words)`.
    static func render(_ entries: [(Symbol, String)], into m: inout Markup) {
        m.open("ul", [("class", "legend")])
        for (symbol, words) in entries {
            m.open("li")
            m.open("svg", [("xmlns", "http://www.w3.org/2000/svg"), ("viewBox", "0 0 16 16"), ("aria-hidden", "true")])
            switch symbol {
            case .dot(let c): m.element("circle", [("cx", "8"), ("cy", "8"), ("r", "4"), ("fill", c)])
            case .hollowDot(let c): m.element("circle", [("cx", "8"), ("cy", "8"), ("r", "4"), ("fill", "#fff"), ("stroke", c), ("stroke-width", "1.8")])
            case .square(let c): m.element("rect", [("x", "4"), ("y", "4"), ("width", "8"), ("height", "8"), ("fill", c)])
            case .line(let c): m.element("path", [("d", "M1,8H15"), ("stroke", c), ("stroke-width", "2.5")])
            case .dashed(let c): m.element("path", [("d", "M1,8H15"), ("stroke", c), ("stroke-width", "1.5"), ("stroke-dasharray", "4 2")])
            case .band(let c):
                m.element("rect", [("x", "1"), ("y", "3"), ("width", "14"), ("height", "10"), ("fill", c), ("stroke", "#777"), ("stroke-width", "0.5")])
            case .outline(let c):
                m.element(
                    "rect",
                    [
                        ("x", "1"), ("y", "3"), ("width", "14"), ("height", "10"), ("fill", "none"), ("stroke", c), ("stroke-width", "1.2"),
                        ("stroke-dasharray", "3 2")
                    ])
            case .marker(let c):
                m.element("path", [("d", "M4,2h8l-4,5z"), ("fill", c)])
                m.element("path", [("d", "M8,6V15"), ("stroke", c), ("stroke-width", "1.5")])
            }
            m.close("svg")
            m.add(" " + words)
            m.close("li")
        }
        m.close("ul")
    }

    /// The entries of what a chart draws on its time axis besides its data (``TimeChart/Shown``),
    /// and only those: a chart without a missing day, an annotation or an alert lists none.
    static func timeline(_ shown: TimeChart.Shown) -> [(Symbol, String)] {
        var entries: [(Symbol, String)] = []
        if shown.missingDays { entries.append((.band("#d4d4d4"), "grey: no data that day")) }
        if !shown.clinicalKinds.isEmpty {
            entries.append((.marker("#6a1b9a"), "clinical event: " + shown.clinicalKinds.map(NumberText.kind).joined(separator: ", ")))
        }
        if !shown.annotationKinds.isEmpty {
            entries.append(
                (.band("#f3dfa2"), "annotation: " + shown.annotationKinds.map { XMLText.bounded(NumberText.kind($0), limit: 40) }.joined(separator: ", ")))
        }
        for (severity, open) in shown.alerts {
            entries.append(
                (.band(TimeChart.alertColours(severity).fill), "\(severity.rawValue) alert, from firing to its end" + (open ? " (arrow: still active)" : "")))
        }
        if shown.reportWeek { entries.append((.outline("#1f4e8c"), "report week (outlined)")) }
        return entries
    }
}
