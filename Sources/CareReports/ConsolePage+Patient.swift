import MobilityModel

/// What the console's patient page shows: the patient's row, history and reports, who acknowledged
/// the patient's alerts, the silences of the patient's teams
/// that apply to them, and the kinds of entry the rules know.
package struct ConsolePatientPage: Sendable {
    /// The list row (firing alerts with who handled them, days since the event, data).
    package var patient: ConsolePatient
    /// The recorded history.
    package var history: UserHistory
    /// The rules' report block, if any.
    package var spec: ReportSpec?
    /// The weeks with a weekly report, newest first.
    package var weeks: [String]
    /// The acknowledgements of the patient's alert instances (from the audit trail), by instance id.
    package var acknowledgements: [String: AlertAcknowledgement]
    /// Pending and active silences of the patient's teams that can apply to the patient.
    package var silences: [Silence]
    /// The clinical-event and annotation kinds of the rules.
    package var kinds: (clinical: [String], annotation: [String])
    /// The patient's own today (the day in their home zone): the new-entry form's date, the
    /// latest the daemon takes a new entry to start on.
    package var today: DayNumber
    /// What the last action did (after it redirected here), if anything.
    package var notice: String?
    /// Why the last action was refused (the daemon's reason), if it was.
    package var refusal: String?
    /// The id the record form gives the entry it adds (fresh for each page drawn), so that the same
    /// form sent twice (a double click, a resend after a slow answer) is one entry, not two.
    package var newEntryID: String?

    package init(
        patient: ConsolePatient, history: UserHistory, spec: ReportSpec?, weeks: [String], acknowledgements: [String: AlertAcknowledgement],
        silences: [Silence],
        kinds: (clinical: [String], annotation: [String]), today: DayNumber
    ) {
        self.patient = patient
        self.history = history
        self.spec = spec
        self.weeks = weeks
        self.acknowledgements = acknowledgements
        self.silences = silences
        self.kinds = kinds
        self.today = today
    }
}

extension ConsolePage {
    /// A time as `2026-03-04 10:12 UTC`.
    static func time(_ t: Timestamp) -> String {
        let s = t.description
        return s.count >= 16 ? "\(s.prefix(10)) \(s.dropFirst(11).prefix(5)) UTC" : s
    }

    /// The patient page: what needs attention (with the action forms), silences, the recovery
    /// charts, the weekly reports, the timeline and the alert history.
    package static func patient(_ page: ConsolePatientPage, who: String, csrf: String) -> String {
        let p = page.patient
        let user = XMLText.bounded(p.user, limit: 64)
        return shell(title: user + " - MobilityWatch", who: who, csrf: csrf) { m in
            m.open("p")
            m.element("a", [("href", "/console")], text: "← All patients")
            m.close("p")
            m.element("h1", text: user)
            var facts = ["team " + p.teams.joined(separator: ", ")]
            if let e = p.sinceEvent { facts.append("\(NumberText.kind(e.kind)) \(days(e.days)) ago") }
            facts.append(p.daysWithoutData.map { $0 == 0 ? "data up to date" : "no data for \(days($0))" } ?? "no data yet")
            m.element("p", [("class", "subtitle")], text: facts.joined(separator: " · "))
            if let n = page.notice { m.element("p", [("class", "notice")], text: n) }
            if let r = page.refusal { m.element("p", [("class", "refused")], text: r) }
            attention(page, csrf: csrf, into: &m)
            silences(page, csrf: csrf, into: &m)
            charts(page, into: &m)
            weeklyReports(page, into: &m)
            timeline(page, csrf: csrf, into: &m)
            alertHistory(page, into: &m)
        }
    }

    private static func attention(_ page: ConsolePatientPage, csrf: String, into m: inout Markup) {
        m.element("h2", text: "Needs attention")
        if page.patient.firing.isEmpty { m.element("p", [("class", "quiet")], text: "No alert is firing.") }
        for f in page.patient.firing {
            m.open("div", [("class", "chart-card")])
            m.open("p")
            m.element("span", [("class", "sev-" + f.severity.rawValue)], text: f.severity.rawValue)
            m.add(" " + NumberText.kind(f.rule) + " (fired " + NumberText.iso(f.firedDay) + "): " + XMLText.bounded(f.headline, limit: 300))
            m.close("p")
            if let by = f.acknowledgedBy { m.element("p", [("class", "quiet")], text: "Acknowledged by " + by + ".") }
            if !f.silencedBy.isEmpty { m.element("p", [("class", "quiet")], text: "Silenced by " + f.silencedBy.joined(separator: ", ") + ".") }
            alertForms(page.patient.user, f, csrf: csrf, into: &m)
            m.close("div")
        }
    }

    private static func silences(_ page: ConsolePatientPage, csrf: String, into m: inout Markup) {
        guard !page.silences.isEmpty else { return }
        m.element("h2", text: "Silences")
        for s in page.silences {
            m.open("div", [("class", "chart-card")])
            let what = s.matchers.map { "\($0.name)\($0.isEqual ? "=" : "!=")\($0.isRegex ? "~" : "")\($0.value)" }.joined(separator: ", ")
            m.element(
                "p",
                text: "Team \(s.team): \(what), until \(time(s.endsAt)), by \(s.createdBy): \(XMLText.bounded(s.comment, limit: 300))")
            expireForm(page.patient.user, s, csrf: csrf, into: &m)
            m.close("div")
        }
    }

    private static func charts(_ page: ConsolePatientPage, into m: inout Markup) {
        guard let spec = page.spec else { return }
        m.element("h2", text: "Recovery")
        guard let window = ReportWindow.recovery(page.history, spec) else {
            m.element("p", [("class", "quiet")], text: "No data recorded for the series this page draws.")
            return
        }
        m.element("p", [("class", "subtitle")], text: "\(NumberText.iso(window.lowerBound)) to \(NumberText.iso(window.upperBound)).")
        RecoveryPanel.render(page.history, spec, window: window, week: nil, into: &m)
        GaitQualityCard.render(
            page.history, spec, window: window, week: nil, explanations: GaitQualityCard.explanations(page.history, spec, window: window), into: &m)
        SixMinuteWalkChart.render(page.history, spec, window: window, week: nil, into: &m)
    }

    private static func weeklyReports(_ page: ConsolePatientPage, into m: inout Markup) {
        m.element("h2", text: "Weekly reports")
        guard !page.weeks.isEmpty else {
            m.element("p", [("class", "quiet")], text: "No weekly report yet.")
            return
        }
        m.open("nav", [("class", "filters")])
        for w in page.weeks.prefix(26) {
            m.element("a", [("href", "/console/patients/\(page.patient.user)/report?week=\(w)")], text: w)
        }
        m.close("nav")
    }

    private static func timeline(_ page: ConsolePatientPage, csrf: String, into m: inout Markup) {
        m.element("h2", text: "Timeline")
        let entries = page.history.timeline.sorted { ($0.firstDay, $0.id) > ($1.firstDay, $1.id) }
        if entries.isEmpty { m.element("p", [("class", "quiet")], text: "No clinical event or annotation recorded.") }
        for e in entries {
            m.open("div", [("class", "chart-card")])
            let span = e.firstDay == e.lastDay ? NumberText.iso(e.firstDay) : "\(NumberText.iso(e.firstDay)) to \(NumberText.iso(e.lastDay))"
            var text = "\(NumberText.kind(e.kind)) (\(e.category == .clinical ? "clinical event" : "annotation")), \(span)"
            if let n = e.note { text += ": " + XMLText.bounded(n, limit: 500) }
            m.element("p", text: text)
            m.element(
                "p", [("class", "quiet")],
                text: NumberText.entered(e).map { "Entered " + $0.dropFirst("entered ".count) + ". Id " + e.id + "." }
                    ?? "From the patient's device. Id \(e.id).")
            entryForms(page, e, csrf: csrf, into: &m)
            m.close("div")
        }
        recordForm(page, csrf: csrf, into: &m)
    }

    private static func alertHistory(_ page: ConsolePatientPage, into m: inout Markup) {
        m.element("h2", text: "Alert history")
        let episodes = page.history.alerts.reversed().prefix(50)
        guard !episodes.isEmpty else {
            m.element("p", [("class", "quiet")], text: "No alert recorded.")
            return
        }
        m.open("div", [("class", "scroll")])
        m.open("table", [("class", "history")])
        m.open("thead")
        m.open("tr")
        for h in ["Alert", "Fired", "Ended", "Acknowledged"] { m.element("th", text: h) }
        m.close("tr")
        m.close("thead")
        m.open("tbody")
        for e in episodes {
            m.open("tr")
            m.open("td")
            m.element("span", [("class", "sev-" + e.severity.rawValue)], text: e.severity.rawValue)
            m.add(" " + NumberText.kind(e.rule) + ": " + XMLText.bounded(e.firedHeadline ?? e.headline, limit: 300))
            m.close("td")
            m.element("td", text: "fired " + NumberText.iso(e.firedDay))
            m.element(
                "td",
                text: e.withdrawnDay.map { "withdrawn " + NumberText.iso($0) } ?? e.endedDay.map { (e.expired ? "expired " : "resolved ") + NumberText.iso($0) }
                    ?? "still firing")
            let ack = page.acknowledgements[e.id].map { a in
                "acknowledged by \(a.by) at \(time(a.at))" + (a.note.map { ": " + XMLText.bounded($0, limit: 300) } ?? "")
            }
            m.element("td", text: ack ?? "not acknowledged")
            m.close("tr")
        }
        m.close("tbody")
        m.close("table")
        m.close("div")
    }
}
