import MobilityModel

extension ConsolePage {
    /// How the patient list is ordered (`?sort=`).
    package enum Sort: String, Sendable, CaseIterable {
        /// Open alerts by severity, then handled ones, then stale data (``ConsolePatient/attention``).
        case attention
        /// By user id.
        case patient
        /// Most recent clinical event first.
        case injury
        /// Longest without data first.
        case data
        /// Slowest 7-day walking speed against baseline first.
        case speed
    }

    /// Which patients the list shows (`?show=`).
    package enum Filter: String, Sendable, CaseIterable {
        /// Everyone of the person's teams.
        case all
        /// Patients with an alert nobody has acknowledged or silenced.
        case open
        /// Patients with any firing alert.
        case firing
        /// Patients without data for ``ConsolePatient/staleDays`` or more (or none at all).
        case stale

        func admits(_ p: ConsolePatient) -> Bool {
            switch self {
            case .all: true
            case .open: p.firing.contains(where: \.isOpen)
            case .firing: !p.firing.isEmpty
            case .stale: (p.daysWithoutData ?? Int.max) >= ConsolePatient.staleDays
            }
        }
    }

    /// The list's rows in `sort` order (ties by user id).
    package static func ordered(_ rows: [ConsolePatient], by sort: Sort) -> [ConsolePatient] {
        func key(_ p: ConsolePatient) -> Double {
            switch sort {
            case .attention: -Double(p.attention)
            case .patient: 0
            case .injury: Double(p.sinceEvent?.days ?? Int.max)
            case .data: -Double(p.daysWithoutData ?? Int.max)
            case .speed: p.latestSpeed.map { v in p.baseline.map { v / $0 } ?? v } ?? .infinity
            }
        }
        return rows.sorted { a, b in
            let ka = key(a), kb = key(b)
            return ka != kb ? ka < kb : a.user < b.user
        }
    }

    /// The patient list of `who` (teams `teams`), `rows` already filtered to those teams.
    package static func patientList(
        _ rows: [ConsolePatient], teams: [String], sort: Sort, filter: Filter, team: String?, who: String, csrf: String
    ) -> String {
        let shown = ordered(rows.filter { filter.admits($0) && (team == nil || $0.teams.contains(team!)) }, by: sort)
        let title = "Patients of " + (team ?? teams.joined(separator: ", "))
        return shell(title: title + " - MobilityWatch", who: who, csrf: csrf) { m in
            m.element("h1", text: title)
            filters(sort: sort, filter: filter, team: team, teams: teams, into: &m)
            sorts(sort: sort, filter: filter, team: team, into: &m)
            if shown.isEmpty {
                m.element("p", [("class", "notice")], text: rows.isEmpty ? "Your teams have no patients yet." : "No patient matches this filter.")
                return
            }
            m.open("div", [("class", "scroll")])
            m.open("table", [("class", "patients")])
            m.open("thead")
            m.open("tr")
            for (s, label) in [
                (Sort.patient, "Patient"), (.attention, "Needs attention"), (.injury, "Since event"), (.data, "Last data"), (.speed, "Walking speed, 7 days")
            ] {
                m.open("th")
                if s == sort {
                    m.element("span", text: label + " ▾")
                } else {
                    m.element("a", [("href", link(sort: s, filter: filter, team: team))], text: label)
                }
                m.close("th")
            }
            m.close("tr")
            m.close("thead")
            m.open("tbody")
            for p in shown { row(p, into: &m) }
            m.close("tbody")
            m.close("table")
            m.close("div")
            m.element(
                "p", [("class", "note")],
                text:
                    "\(shown.count) of \(rows.count) patients. Days are UTC days; the trend line is the last \(ConsolePatient.trendDays) days, the dashed line the baseline."
            )
        }
    }

    /// A link to the list with these settings (defaults left out).
    static func link(sort: Sort, filter: Filter, team: String?) -> String {
        var q: [String] = []
        if sort != .attention { q.append("sort=" + sort.rawValue) }
        if filter != .all { q.append("show=" + filter.rawValue) }
        if let team { q.append("team=" + team) }
        return "/console" + (q.isEmpty ? "" : "?" + q.joined(separator: "&"))
    }

    private static let columns: [(Sort, String)] = [
        (.patient, "Patient"), (.attention, "Needs attention"), (.injury, "Since event"), (.data, "Last data"), (.speed, "Walking speed, 7 days")
    ]

    /// The sort links a phone shows in place of the table's head (hidden there).
    private static func sorts(sort: Sort, filter: Filter, team: String?, into m: inout Markup) {
        m.open("nav", [("class", "filters sort")])
        m.element("span", text: "Sort by:")
        for (s, label) in columns {
            m.element("a", [("href", link(sort: s, filter: filter, team: team))] + (s == sort ? [("class", "on")] : []), text: label.lowercased())
        }
        m.close("nav")
    }

    private static func filters(sort: Sort, filter: Filter, team: String?, teams: [String], into m: inout Markup) {
        m.open("nav", [("class", "filters")])
        let labels: [(Filter, String)] = [(.all, "All"), (.open, "Needs attention"), (.firing, "Alerts firing"), (.stale, "No recent data")]
        for (f, label) in labels {
            m.element("a", [("href", link(sort: sort, filter: f, team: team))] + (f == filter ? [("class", "on")] : []), text: label)
        }
        if teams.count > 1 {
            m.element("a", [("href", link(sort: sort, filter: filter, team: nil))] + (team == nil ? [("class", "on")] : []), text: "All my teams")
            for t in teams {
                m.element("a", [("href", link(sort: sort, filter: filter, team: t))] + (team == t ? [("class", "on")] : []), text: "Team " + t)
            }
        }
        m.close("nav")
    }

    private static func row(_ p: ConsolePatient, into m: inout Markup) {
        m.open("tr")
        m.open("td")
        m.element("a", [("href", "/console/patients/" + p.user)], text: XMLText.bounded(p.user, limit: 64))
        m.close("td")
        m.open("td", [("class", "attention")])
        if p.firing.isEmpty { m.element("span", [("class", "quiet")], text: "no alert firing") }
        for f in p.firing {
            m.open("div")
            m.element("span", [("class", "sev-" + f.severity.rawValue)], text: f.severity.rawValue)
            m.add(" " + NumberText.kind(f.rule))
            if let by = f.acknowledgedBy { m.element("span", [("class", "quiet")], text: " · acknowledged by " + by) }
            if !f.silencedBy.isEmpty { m.element("span", [("class", "quiet")], text: " · silenced by " + f.silencedBy.joined(separator: ", ")) }
            m.close("div")
        }
        m.close("td")
        m.element("td", text: p.sinceEvent.map { "\(NumberText.kind($0.kind)), \(days($0.days)) ago" } ?? "none recorded")
        switch p.daysWithoutData {
        case nil: m.element("td", [("class", "stale")], text: "no data yet")
        case let d? where d >= ConsolePatient.staleDays: m.element("td", [("class", "stale")], text: "no data for \(d) days")
        case 0?: m.element("td", text: "up to date")
        case let d?: m.element("td", text: "no data for \(days(d))")
        }
        m.open("td", [("class", "speed")])
        if let v = p.latestSpeed {
            var text = NumberText.fixed(v, 2) + " " + p.speedUnit
            if let b = p.baseline, b > 0 { text += " (" + NumberText.signed((v / b - 1) * 100, 0) + " % vs baseline)" }
            m.add(text)
            sparkline(p, into: &m)
        } else {
            m.element("span", [("class", "quiet")], text: "no 7-day value")
        }
        m.close("td")
        m.close("tr")
    }

    static func days(_ n: Int) -> String { n == 1 ? "1 day" : "\(n) days" }

    /// The 7-day speed over the last ``ConsolePatient/trendDays`` days as a small line, the
    /// baseline dashed; inline SVG (no script, no external image).
    static func sparkline(_ p: ConsolePatient, into m: inout Markup) {
        guard let first = p.speed.first?.day, let last = p.speed.last?.day else { return }
        let values = p.speed.map(\.value) + (p.baseline.map { [$0] } ?? [])
        let lo = values.min()!, hi = values.max()!
        let span = max(hi - lo, 1e-9), days = Double(max(1, last - first))
        let w = 90.0, h = 24.0
        func y(_ v: Double) -> String { NumberText.coord(h - 2 - (v - lo) / span * (h - 4)) }
        let points = p.speed.map { NumberText.coord(2 + Double($0.day - first) / days * (w - 4)) + "," + y($0.value) }.joined(separator: " ")
        m.open("svg", [("class", "spark"), ("viewBox", "0 0 90 24"), ("role", "img"), ("aria-label", "walking speed, last \(ConsolePatient.trendDays) days")])
        if let b = p.baseline {
            m.element("line", [("x1", "2"), ("x2", "88"), ("y1", y(b)), ("y2", y(b)), ("stroke", "#555"), ("stroke-dasharray", "3 2"), ("stroke-width", "1")])
        }
        m.element("polyline", [("points", points), ("fill", "none"), ("stroke", "#1565c0"), ("stroke-width", "1.5")])
        m.close("svg")
    }
}
