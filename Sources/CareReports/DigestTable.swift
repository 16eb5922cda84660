import MobilityModel

/// The weekly digest as HTML tables: the trend panels' figures, the six-minute walks, the
/// collection conditions, the alerts, the annotations and the explanations.
enum DigestTable {
    /// Writes the tables of `digest`.
    static func render(_ digest: WeeklyDigest, into m: inout Markup) {
        if !digest.explanations.isEmpty {
            m.open("section", [("class", "explanations")])
            m.element("h2", text: "In words")
            for s in digest.explanations.prefix(10) { m.element("p", [("class", "explanation")], text: XMLText.bounded(s)) }
            m.close("section")
        }
        metrics(digest, into: &m)
        sixMinuteWalk(digest, into: &m)
        conditions(digest, into: &m)
        alerts(digest, into: &m)
        annotations(digest, into: &m)
    }

    private static func value(_ v: Double?, _ unit: DisplayUnit, _ decimals: Int) -> String {
        v.map { "\(NumberText.fixed($0, decimals)) \(unit.symbol)" } ?? "–"
    }

    /// Digits for a unit: whole metres, two decimals for speeds and fractions, one for percent.
    private static func decimals(_ u: DisplayUnit) -> Int { u.symbol == "%" ? 1 : u.symbol == "m" || u.symbol == "ft" ? 0 : 2 }

    /// A table in a horizontally scrolling box. `rows` are cells with whether each is a number
    /// (right-aligned); a row's first cell is its header, a name or label that may break after an
    /// underscore. `classes` name the table and, by column, its head and body cells (for the phone
    /// layout of the style sheet); without rows the table holds one full-width cell saying `empty`.
    private static func table(
        _ caption: String, _ head: [String], _ rows: [[(String, Bool)]], empty: String? = nil, classes: (table: String, columns: [String])? = nil,
        into m: inout Markup
    ) {
        func attributes(_ column: Int, numeric: Bool = false) -> [(String, String)] {
            let c = [classes.flatMap { column < $0.columns.count ? $0.columns[column] : nil } ?? "", numeric ? "num" : ""].filter { !$0.isEmpty }
            return c.isEmpty ? [] : [("class", c.joined(separator: " "))]
        }
        m.open("div", [("class", "scroll")])
        m.open("table", classes.map { [("class", $0.table)] } ?? [])
        m.element("caption", text: caption)
        m.open("thead")
        m.open("tr")
        for (i, h) in head.enumerated() { m.element("th", [("scope", "col")] + attributes(i), text: h) }
        m.close("tr")
        m.close("thead")
        m.open("tbody")
        if rows.isEmpty, let empty {
            m.open("tr")
            m.element("td", [("class", "empty"), ("colspan", String(head.count))], text: empty)
            m.close("tr")
        }
        for r in rows {
            m.open("tr")
            for (i, (cell, numeric)) in r.enumerated() {
                if i == 0 {
                    m.element("th", [("scope", "row")] + attributes(i), breakingAfterUnderscores: cell)
                } else {
                    m.element("td", attributes(i, numeric: numeric), text: cell)
                }
            }
            m.close("tr")
        }
        m.close("tbody")
        m.close("table")
        m.close("div")
    }

    private static func metrics(_ digest: WeeklyDigest, into m: inout Markup) {
        guard !digest.metrics.isEmpty else { return }
        var rows: [[(String, Bool)]] = []
        for s in digest.metrics {
            let n = decimals(s.unit)
            let trend: String =
                s.trendPerWeek.map { t in
                    let better = s.lowerIsBetter ? t < 0 : t > 0
                    let word = abs(t) < 1e-9 ? "flat" : better ? "improving" : "worsening"
                    return "\(NumberText.signed(t, n + 1)) \(s.unit.symbol) \(word)"
                } ?? "not enough data"
            rows.append([
                ("\(s.title), daily: mean", false), (value(s.thisWeek.dailyMean, s.unit, n), true),
                (value(s.lastWeek.dailyMean, s.unit, n), true), (value(s.baseline, s.unit, n), true), (trend, false),
                ("\(s.thisWeek.daysWithoutData) (last week \(s.lastWeek.daysWithoutData))", true)
            ])
            rows.append([
                ("\(s.title), smoothed: last", false), (value(s.thisWeek.smoothedLast, s.unit, n), true),
                (value(s.lastWeek.smoothedLast, s.unit, n), true), ("", false), ("", false), ("", false)
            ])
        }
        table(
            "This week against last week and the pre-injury baseline"
                + (digest.metrics.contains(where: \.lowerIsBetter) ? " (double support: lower is better)" : ""),
            ["Measure", "This week", "Last week", "Baseline", "Trend per week", "Days without data"], rows, into: &m)
    }

    private static func sixMinuteWalk(_ digest: WeeklyDigest, into m: inout Markup) {
        guard let w = digest.sixMinuteWalk else { return }
        let n = decimals(w.unit)
        var rows: [[(String, Bool)]] = []
        for c in w.clinic {
            rows.append([
                ("Clinic test", false), (NumberText.iso(c.day), false), ("\(NumberText.fixed(c.value, n)) \(w.unit.symbol)", true),
                ("clinic (user-entered)", false)
            ])
        }
        for e in w.watch {
            rows.append([
                ("Watch estimate", false), (NumberText.iso(e.day), false), ("\(NumberText.fixed(e.value, n)) \(w.unit.symbol)", true),
                (e.provisional ? "provisional (uncalibrated or capped)" : "calibrated", false)
            ])
        }
        table("Six-minute walks of the week", ["Source", "Day", "Distance", "Status"], rows, empty: "No six-minute walk this week", into: &m)
    }

    private static func conditions(_ digest: WeeklyDigest, into m: inout Markup) {
        guard !digest.conditions.isEmpty else { return }
        let rows = digest.conditions.prefix(50).map { c -> [(String, Bool)] in
            [
                (XMLText.bounded(c.group, limit: 60), false), (XMLText.bounded(c.label, limit: 60), false), (String(c.count), true),
                ("\(NumberText.fixed(c.share * 100, 0)) %", true)
            ]
        }
        table("Collection conditions (shares of the week's samples)", ["Group", "Condition", "Samples", "Share"], rows, into: &m)
    }

    private static func alerts(_ digest: WeeklyDigest, into m: inout Markup) {
        let rows = digest.alerts.prefix(100).map { a -> [(String, Bool)] in
            [
                (a.episode.rule, false), (a.episode.severity.rawValue, false), (a.state.rawValue, false), (NumberText.iso(a.episode.sinceDay), false),
                (
                    a.episode.withdrawnDay.map { "withdrawn " + NumberText.iso($0) }
                        ?? a.episode.endedDay.map { (a.episode.expired ? "expired " : "") + NumberText.iso($0) } ?? "still active", false
                ),
                (XMLText.bounded(a.episode.headline), false)
            ]
        }
        // On a phone the headline, a sentence, goes on its own full-width line under the alert's
        // other cells (the style sheet's `table.alerts`), so that those keep readable widths. The
        // days are the user's local days, as in every other view of the alert: since (its
        // condition first held) and its end; the day it fired is on its band in the charts.
        table(
            "Alerts of the week", ["Rule", "Severity", "This week", "Since", "Ended", "What it says"], rows,
            empty: "No alert fired, was active or ended", classes: ("alerts", ["rule", "", "", "day", "ended", "summary"]), into: &m)
    }

    private static func annotations(_ digest: WeeklyDigest, into m: inout Markup) {
        let rows = digest.annotations.prefix(100).map { a -> [(String, Bool)] in
            [
                (NumberText.kind(XMLText.bounded(a.kind, limit: 60)), false), (a.category.description, false),
                (a.firstDay == a.lastDay ? NumberText.iso(a.firstDay) : "\(NumberText.iso(a.firstDay)) to \(NumberText.iso(a.lastDay))", false),
                (a.note.map { XMLText.bounded($0) } ?? "", false)
            ]
        }
        table("Clinical events and annotations of the week", ["Kind", "Category", "Days", "Note"], rows, empty: "No clinical event or annotation", into: &m)
    }
}
