import MobilityModel

/// The care-team pages: self-contained XHTML-compatible HTML with inline SVG, no script and no
/// external asset, so that a page prints, mails and opens offline; it parses as XML and renders
/// the same on every run (no clock, no locale, no randomness).
package enum ReportPage {
    /// The recovery page of `history`: the recovery panel, the gait-quality card and the clinic vs
    /// watch six-minute walk over the recovery window (30 days before to 60 days after the latest
    /// clinical event, within the recorded range; see ``ReportWindow``).
    package static func panel(history: UserHistory, spec: ReportSpec) -> String {
        var m = Markup(capacity: 64 * 1024)
        let user = XMLText.bounded(history.user, limit: 80)
        shell(title: "Recovery of \(user)", into: &m) { m in
            m.element("h1", text: "Recovery of \(user)")
            guard let window = ReportWindow.recovery(history, spec) else {
                m.element("p", text: "No data recorded for the series this report draws.")
                return
            }
            subtitle(window, history, into: &m)
            RecoveryPanel.render(history, spec, window: window, week: nil, into: &m)
            GaitQualityCard.render(
                history, spec, window: window, week: nil,
                explanations: GaitQualityCard.explanations(history, spec, window: window), into: &m)
            SixMinuteWalkChart.render(history, spec, window: window, week: nil, into: &m)
        }
        return m.text
    }

    /// The weekly care-team report: `digest` in tables, then the three charts over the eight
    /// weeks ending with the digest's week, the week highlighted.
    package static func weekly(digest: WeeklyDigest, history: UserHistory, spec: ReportSpec) -> String {
        var m = Markup(capacity: 96 * 1024)
        let user = XMLText.bounded(digest.user, limit: 80)
        shell(title: "Weekly report \(digest.week) of \(user)", into: &m) { m in
            m.element("h1", text: "Weekly report of \(user)")
            m.element(
                "p", [("class", "subtitle")],
                text: "Week \(digest.week): Monday \(NumberText.iso(digest.firstDay)) to Sunday \(NumberText.iso(digest.lastDay)).")
            DigestTable.render(digest, into: &m)
            let window = ReportWindow.weekly(digest, history, spec)
            let week = digest.firstDay...max(digest.firstDay, digest.lastDay)
            m.element(
                "p", [("class", "subtitle")],
                text: "Charts: \(NumberText.iso(window.lowerBound)) to \(NumberText.iso(window.upperBound)), the report week outlined in blue.")
            RecoveryPanel.render(history, spec, window: window, week: week, into: &m)
            GaitQualityCard.render(history, spec, window: window, week: week, explanations: digest.explanations, into: &m)
            SixMinuteWalkChart.render(history, spec, window: window, week: week, into: &m)
        }
        return m.text
    }

    private static func subtitle(_ window: ClosedRange<DayNumber>, _ history: UserHistory, into m: inout Markup) {
        var s = "\(NumberText.iso(window.lowerBound)) to \(NumberText.iso(window.upperBound))"
        if let e = ReportWindow.latestClinicalEvent(history) {
            s +=
                ": \(ReportWindow.daysBefore) days before to \(ReportWindow.daysAfter) days after the \(NumberText.kind(e.kind)) on \(NumberText.iso(e.firstDay)) (as far as recorded)."
        } else {
            s += " (no clinical event recorded)."
        }
        m.element("p", [("class", "subtitle")], text: s)
    }

    private static func shell(title: String, into m: inout Markup, body: (inout Markup) -> Void) {
        m.trusted("<!DOCTYPE html>\n")
        m.open("html", [("xmlns", "http://www.w3.org/1999/xhtml"), ("lang", "en")])
        m.open("head")
        m.element("meta", [("charset", "utf-8")])
        m.element("meta", [("name", "viewport"), ("content", "width=device-width, initial-scale=1")])
        m.element("title", text: title)
        m.open("style")
        m.trusted(style)
        m.close("style")
        m.close("head")
        m.open("body")
        body(&m)
        m.element(
            "p", [("class", "footer")],
            text: "MobilityWatch care-team report. Values are from the phone and watch as recorded; a day without data is missing, not zero.")
        m.close("body")
        m.close("html")
        m.trusted("\n")
    }

    /// The style sheet: phone first, wider on a desk, black on white on paper. On a phone the alerts
    /// table is a grid whose summary, a sentence, has a full-width line of its own under the rule,
    /// severity and days, and a rule name breaks after its underscores (on a desk it stays whole).
    /// It holds no `<` or `&`, so it is valid XML text.
    static let style: StaticString = """
        body{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;color:#1a1a1a;background:#fff;margin:0 auto;max-width:780px;padding:10px 12px;line-height:1.4;font-size:15px}
        h1{font-size:1.35em;margin:.3em 0}
        h2{font-size:1.08em;margin:1.1em 0 .3em}
        .subtitle{color:#444;margin:.2em 0 .6em}
        svg.chart{width:100%;max-width:640px;height:auto;display:block}
        .chart-card{break-inside:avoid;page-break-inside:avoid;margin-bottom:1.2em}
        .legend{list-style:none;padding:0;margin:.3em 0;font-size:.82em;display:flex;flex-wrap:wrap;gap:2px 14px}
        .legend svg{width:1.1em;height:1.1em;vertical-align:-.2em}
        .explanation{border-left:4px solid #2e7d32;background:#edf6ee;padding:5px 10px;margin:.4em 0}
        .note,.footer{color:#555;font-size:.85em}
        .scroll{overflow-x:auto}
        table{border-collapse:collapse;width:100%;font-size:.86em;margin:.4em 0 1em}
        caption{text-align:left;font-weight:bold;padding:4px 0}
        th,td{border-bottom:1px solid #d0d0d0;padding:4px 6px;text-align:left;vertical-align:top}
        thead th{border-bottom:2px solid #888}
        td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
        td.empty{color:#555}
        .alerts .day,.alerts .rule{white-space:nowrap}
        .alerts .rule wbr{display:none}
        @media (max-width:480px){body{font-size:14px;padding:8px}table{font-size:.78em}th,td{padding:3px 3px}td.num{white-space:normal}th,td{overflow-wrap:anywhere}
        table.alerts,table.alerts caption,table.alerts thead,table.alerts tbody{display:block}
        table.alerts tr{display:grid;grid-template-columns:minmax(0,1.5fr) minmax(0,1fr) minmax(0,1fr) minmax(0,1.15fr) minmax(0,1.15fr);border-bottom:1px solid #d0d0d0}
        table.alerts thead tr{border-bottom:2px solid #888}
        table.alerts th,table.alerts td{border:0}
        table.alerts .rule{white-space:normal}
        table.alerts .rule wbr{display:inline}
        table.alerts .summary,table.alerts .empty{grid-column:1/-1}
        table.alerts td.summary{padding-top:0;padding-bottom:5px}}
        @media print{body{max-width:none;padding:0;font-size:10pt}.scroll{overflow:visible}.chart-card{margin-bottom:8mm}.explanation{background:none}}

        """
}
