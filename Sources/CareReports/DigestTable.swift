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

    private static func table(_ caption: String, _ head: [String], _ rows: [[(String, Bool)]], into m: inout Markup) {
        m.open("div", [("class", "scroll")])
        m.open("table")
        m.element("caption", text: caption)
        m.open("thead")
        m.open("tr")
        for h in head { m.element("th", [("scope", "col")], text: h) }
        m.close("tr")
        m.close("thead")
        m.open("tbody")
        for r in rows {
            m.open("tr")
            for (i, (cell, numeric)) in r.enumerated() {
                if i == 0 { m.element("th", [("scope", "row")], text: cell) } else { m.element("td", numeric ? [("class", "num")] : [], text: cell) }
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
        if rows.isEmpty { rows.append([("No six-minute walk this week", false), ("", false), ("", true), ("", false)]) }
        table("Six-minute walks of the week", ["Source", "Day", "Distance", "Status"], rows, into: &m)
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
        var rows = digest.alerts.prefix(100).map { a -> [(String, Bool)] in
            [
                (a.episode.rule, false), (a.episode.severity.rawValue, false), (a.state.rawValue, false), (NumberText.iso(a.episode.firedDay), false),
                (a.episode.resolvedDay.map(NumberText.iso) ?? "still active", false), (XMLText.bounded(a.episode.reportedSummary), false)
            ]
        }
        if rows.isEmpty { rows.append([("No alert fired, was active or resolved", false), ("", false), ("", false), ("", false), ("", false), ("", false)]) }
        table("Alerts of the week", ["Rule", "Severity", "This week", "Fired", "Resolved", "Summary"], rows, into: &m)
    }

    private static func annotations(_ digest: WeeklyDigest, into m: inout Markup) {
        var rows = digest.annotations.prefix(100).map { a -> [(String, Bool)] in
            [
                (NumberText.kind(XMLText.bounded(a.kind, limit: 60)), false), (a.category.description, false),
                (a.firstDay == a.lastDay ? NumberText.iso(a.firstDay) : "\(NumberText.iso(a.firstDay)) to \(NumberText.iso(a.lastDay))", false),
                (a.note.map { XMLText.bounded($0) } ?? "", false)
            ]
        }
        if rows.isEmpty { rows.append([("No clinical event or annotation", false), ("", false), ("", false), ("", false)]) }
        table("Clinical events and annotations of the week", ["Kind", "Category", "Days", "Note"], rows, into: &m)
    }
}
