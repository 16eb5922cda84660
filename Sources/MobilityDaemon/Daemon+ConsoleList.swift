import CareReports
import HTTPEndpoint
import MobilityModel
import StateStore

/// What the console reads and acts through: the store and the care-staff desks the MQTT commands go to.
struct ConsoleDesks: Sendable {
    let store: any StateBackend
    let acknowledgements: AcknowledgementDesk
    let silences: SilenceDesk
    let timelines: TimelineDesk
    /// Hands an acknowledgement to its patient's shard, which gives the receipt its outcome.
    let deliverAcknowledgement: @Sendable (AcknowledgementCommand, StaffReceipt) -> Void
    /// Hands a timeline command to its patient's shard, which answers it.
    let deliverTimeline: @Sendable (TimelineRequest) -> Void
    /// The clinical-event kinds of the running rules (an entry of another kind is an annotation).
    let clinicalKinds: @Sendable () -> [String]
    /// The wall clock.
    let now: @Sendable () -> Timestamp
}

extension Daemon {
    /// `GET /console[?sort=…&show=…&team=…]`: the patients of the signed-in person's teams, one row
    /// each (``ConsolePatient``), those needing attention first. A team that is not the person's is 404.
    func mountConsoleList(_ router: inout HTTPRouter, desks: ConsoleDesks) {
        let careTeams = careTeams, reloader = reloader, clock = clock
        router.get("/console", query: ["sort", "show", "team"], access: .session) { request in
            let who = request.principal ?? "", csrf = request.session?.csrf ?? "", teams = request.teams ?? []
            guard let sort = ConsolePage.Sort(rawValue: request.query("sort") ?? "attention"),
                let filter = ConsolePage.Filter(rawValue: request.query("show") ?? "all")
            else {
                let sorts = ConsolePage.Sort.allCases.map(\.rawValue).joined(separator: ", ")
                let shows = ConsolePage.Filter.allCases.map(\.rawValue).joined(separator: ", ")
                return .console(
                    ConsolePage.message(title: "Not a list", text: "sort is one of \(sorts); show is one of \(shows)", who: who, csrf: csrf), status: 400)
            }
            let team = request.query("team")
            if let team, !teams.contains(team) {
                return .console(ConsolePage.message(title: "Not found", text: "You are not in a team of that name.", who: who, csrf: csrf), status: 404)
            }
            let now = clock.wall()
            let spec = reloader.report.map(ReportSpec.init)
            var rows: [ConsolePatient] = []
            do {
                for u in careTeams.users(inAny: teams) {
                    rows.append(try Daemon.consolePatient(u, teams: careTeams.teams(of: u).filter(teams.contains), now: now, spec: spec, desks: desks))
                }
            } catch {
                return .console(
                    ConsolePage.message(title: "Unavailable", text: "The state store could not be read; try again.", who: who, csrf: csrf), status: 500)
            }
            return .console(ConsolePage.patientList(rows, teams: teams, sort: sort, filter: filter, team: team, who: who, csrf: csrf))
        }
    }

    /// One patient's row of the list at `now` (days are UTC days), as a person in `teams` (the
    /// patient's teams that are also the person's) sees it: only those teams' silences count.
    static func consolePatient(_ u: String, teams: [String], now: Timestamp, spec: ReportSpec?, desks: ConsoleDesks) throws -> ConsolePatient {
        let today = LocalCalendar.utc.day(of: now)
        let history = try desks.store.history(of: u, from: today - 400, through: .max)
        return ConsolePatient(
            history: history, teams: teams, today: today, spec: spec,
            acknowledgedBy: { desks.acknowledgements.acknowledgement(of: $0)?.by },
            silencedBy: { e in
                desks.silences.silences(over: u, among: teams, rule: e.rule, severity: e.severity, labels: e.labels, now: now).map(\.createdBy)
            })
    }
}
