import CareReports
import MobilityModel
import Testing

/// The console's pages as values: the list's order and filters, "no data for N days", and every
/// string from a person or a device shown as text.
@Suite struct ConsolePageTests {
    static let today: DayNumber = 20_500

    /// A patient with data through `lastDay` and, when given, a firing episode.
    static func history(_ user: String, lastDay: DayNumber, firing: (String, Severity, String)? = nil) -> UserHistory {
        var days: [DayNumber: Double?] = [:]
        for d in (lastDay - 40)...lastDay { days[d] = 1.2 }
        var h = UserHistory(user: user, series: ["speed_p95": days])
        if let (id, severity, headline) = firing {
            h.alerts = [AlertEpisode(id: id, rule: "stalled_recovery", severity: severity, firedDay: lastDay - 3, endedDay: nil, headline: headline)]
        }
        h.timeline = [TimelineEvent(id: "inj", category: .clinical, kind: "injury", firstDay: today - 30, lastDay: today - 30)]
        return h
    }

    static func row(_ h: UserHistory, acknowledgedBy: String? = nil, silencedBy: [String] = []) -> ConsolePatient {
        ConsolePatient(
            history: h, teams: ["ward-a"], today: today, spec: nil, acknowledgedBy: { _ in acknowledgedBy }, silencedBy: { _ in silencedBy })
    }

    @Test func openAlertsBySeverityComeFirstThenHandledThenQuiet() {
        let rows = [
            Self.row(Self.history("a-fine", lastDay: Self.today - 1)),
            Self.row(Self.history("b-quiet", lastDay: Self.today - 9)),
            Self.row(Self.history("c-acked", lastDay: Self.today - 1, firing: ("c1", .critical, "x")), acknowledgedBy: "nurse.kim"),
            Self.row(Self.history("d-warning", lastDay: Self.today - 1, firing: ("d1", .warning, "x"))),
            Self.row(Self.history("e-critical", lastDay: Self.today - 1, firing: ("e1", .critical, "x")))
        ]
        #expect(ConsolePage.ordered(rows, by: .attention).map(\.user) == ["e-critical", "d-warning", "c-acked", "b-quiet", "a-fine"])
        #expect(ConsolePage.ordered(rows, by: .data).map(\.user).first == "b-quiet")
        #expect(rows[1].daysWithoutData == 8)
        #expect(rows[0].daysWithoutData == 0)
        #expect(rows[0].sinceEvent?.kind == "injury" && rows[0].sinceEvent?.days == 30)
        let page = ConsolePage.patientList(rows, teams: ["ward-a"], sort: .attention, filter: .stale, team: nil, who: "nurse.kim", csrf: "c")
        #expect(page.contains("<td class=\"stale\">no data for 8 days</td>"))
        #expect(page.matches(of: /href="\/console\/patients\/([a-z-]+)"/).map { String($0.1) } == ["b-quiet"])
        let open = ConsolePage.patientList(rows, teams: ["ward-a"], sort: .attention, filter: .open, team: nil, who: "nurse.kim", csrf: "c")
        #expect(open.matches(of: /href="\/console\/patients\/([a-z-]+)"/).map { String($0.1) } == ["e-critical", "d-warning"])
        #expect(open.contains("acknowledged by") == false)
        let all = ConsolePage.patientList(rows, teams: ["ward-a"], sort: .attention, filter: .all, team: nil, who: "nurse.kim", csrf: "c")
        #expect(all.contains(" · acknowledged by nurse.kim"))
    }

    @Test func textFromPeopleAndDevicesIsShownAsText() throws {
        var h = Self.history("a", lastDay: Self.today - 1, firing: ("a1", .warning, "<script>alert(1)</script>"))
        h.timeline.append(
            TimelineEvent(id: "n1", category: .annotation, kind: "note", firstDay: Self.today - 2, lastDay: Self.today - 2, note: "<img src=x onerror=y>"))
        let silence = Silence(
            id: "0123456789abcdef", team: "ward-a", matchers: [try SilenceMatcher(name: "user", value: "a")], startsAt: Timestamp(milliseconds: 0),
            endsAt: Timestamp(milliseconds: 1), createdBy: "nurse.kim", comment: "\"><b>on leave</b>")
        var page = ConsolePatientPage(
            patient: Self.row(h, acknowledgedBy: "nurse.kim"), history: h, spec: nil, weeks: [],
            acknowledgements: ["a1": AlertAcknowledgement(by: "nurse.kim", at: Timestamp(milliseconds: 0), note: "<i>seen</i>")], silences: [silence],
            kinds: (["injury"], ["note"]), today: Self.today)
        page.refusal = "Refused (invalid_field): <u>bad</u>"
        let html = ConsolePage.patient(page, who: "nurse.kim", csrf: "token")
        for raw in ["<script>", "<img", "<b>on leave", "<i>seen", "<u>bad"] { #expect(!html.contains(raw), "\(raw)") }
        for escaped in ["&lt;script&gt;", "&lt;img src=x onerror=y&gt;", "&quot;&gt;&lt;b&gt;on leave", "&lt;i&gt;seen&lt;/i&gt;", "&lt;u&gt;bad"] {
            #expect(html.contains(escaped), "\(escaped)")
        }
        // Every form carries the session's token.
        #expect(html.components(separatedBy: "<form ").count == html.components(separatedBy: "name=\"csrf\" value=\"token\"").count)
        #expect(html.components(separatedBy: "<form ").count > 3)
        #expect(!html.contains("<script"))
    }
}
