import CareReports
import HTTPEndpoint
import MobilityModel
import StateStore

extension Daemon {
    /// `GET /console/patients/{u}` (the patient page) and `GET /console/patients/{u}/report?week=`
    /// (a weekly report): for a patient of the signed-in person's teams only; any other user id,
    /// known or not, is the same 404 on every console route.
    func mountConsolePatient(_ router: inout HTTPRouter, desks: ConsoleDesks) {
        let reloader = reloader, clock = clock
        router.get("/console/patients/{u}", query: ["done"], access: .session) { [self] request in
            guard let u = consolePatient(request) else { return Daemon.consoleNotFound(request) }
            do {
                var page = try consolePatientPage(u, seenBy: request.teams ?? [], desks: desks, now: clock.wall())
                let done = request.query("done")
                page.notice = Daemon.consoleNotices.first { $0.0 == done }?.1
                return .console(ConsolePage.patient(page, who: request.principal ?? "", csrf: request.session?.csrf ?? ""))
            } catch {
                return Daemon.consoleUnavailable(request)
            }
        }
        router.get("/console/patients/{u}/report", query: ["week"], access: .session) { [self] request in
            guard let u = consolePatient(request) else { return Daemon.consoleNotFound(request) }
            let week = request.query("week")
            guard let week, ISOWeek(parsing: week) != nil else { return .text("week must look like 2026-W10\n", status: 400) }
            guard let declared = reloader.report else { return .text("the rules declare no report block\n", status: 404) }
            do {
                guard let r = try desks.store.weeklyReport(of: u, week: week) else { return .text("no such weekly report\n", status: 404) }
                guard case .success(let digest) = WeeklyDigest.decode(r.payload) else { return .text("the stored report cannot be read\n", status: 500) }
                let history = try desks.store.history(of: u, from: digest.firstDay - 120, through: digest.lastDay)
                // The report page is the reports' own (an inline style sheet): the listener's default policy, still no script.
                return .html(ReportPage.weekly(digest: digest, history: history, spec: ReportSpec(declared)))
            } catch {
                return Daemon.consoleUnavailable(request)
            }
        }
    }

    /// What a `?done=` after an action says.
    static let consoleNotices: [(String, String)] = [
        ("ack", "Acknowledged."), ("silence", "Silenced."), ("expire", "The silence has ended."), ("add", "Recorded."),
        ("correct", "Corrected."), ("retract", "Retracted.")
    ]

    /// The `{u}` of a console request if the signed-in person's teams hold that patient.
    func consolePatient(_ request: HTTPRequest) -> String? {
        guard let u = request.parameter("u"), let teams = request.teams else { return nil }
        return consoleTeams(of: u, seenBy: teams).isEmpty ? nil : u
    }

    /// The patient's teams that are also in `teams` (a signed-in person's): the only teams whose
    /// silences and actions the console shows that person for the patient.
    func consoleTeams(of u: String, seenBy teams: [String]) -> [String] {
        careTeams.teams(of: u).filter(teams.contains)
    }

    /// The most acknowledgements of one patient the page names (the latest; older alerts show none).
    static let consoleAcknowledgements = 10_000

    /// The page of patient `u` at `now` as a person in `seenBy` teams sees it.
    func consolePatientPage(_ u: String, seenBy: [String], desks: ConsoleDesks, now: Timestamp) throws -> ConsolePatientPage {
        let spec = reloader.report.map(ReportSpec.init)
        let teams = consoleTeams(of: u, seenBy: seenBy)
        let patient = try Daemon.consolePatient(u, teams: teams, now: now, spec: spec, desks: desks)
        let history = try desks.store.history(of: u, from: .min, through: .max)
        var acks: [String: AlertAcknowledgement] = [:]
        for a in try desks.store.auditTrail(of: u, action: "acknowledge", limit: Daemon.consoleAcknowledgements) {
            acks[a.subject] = AlertAcknowledgement(by: a.actor, at: a.at, note: a.note)
        }
        let silences = desks.silences.silences(ofTeams: teams).filter { s in
            s.state(at: now) != .expired && !s.matchers.contains { $0.name == "user" && !$0.matches(u) }
        }
        var page = ConsolePatientPage(
            patient: patient, history: history, spec: spec, weeks: try desks.store.reportWeeks(of: u), acknowledgements: acks, silences: silences,
            kinds: reloader.timelineKinds, today: desks.timelines.today(of: u, at: now))
        page.newEntryID = TimelineEvent.newID()
        return page
    }

    /// The one answer for a patient the person may not see, whether or not the id exists.
    static func consoleNotFound(_ request: HTTPRequest) -> HTTPResponse {
        .console(
            ConsolePage.message(
                title: "Not found", text: "None of your teams has a patient with this id.", who: request.principal, csrf: request.session?.csrf),
            status: 404)
    }

    /// The answer when the store cannot be read.
    static func consoleUnavailable(_ request: HTTPRequest) -> HTTPResponse {
        .console(
            ConsolePage.message(
                title: "Unavailable", text: "The state store could not be read; try again.", who: request.principal, csrf: request.session?.csrf),
            status: 500)
    }
}
