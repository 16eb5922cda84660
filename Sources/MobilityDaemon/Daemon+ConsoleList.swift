import CareReports
import HTTPEndpoint

extension Daemon {
    /// `GET /console`: the patients of the signed-in person's teams.
    func mountConsoleList(_ router: inout HTTPRouter) {
        router.get("/console", access: .session) { request in
            let who = request.principal ?? "", csrf = request.session?.csrf ?? ""
            return .console(ConsolePage.message(title: "Patients", text: "Teams: \((request.teams ?? []).joined(separator: ", "))", who: who, csrf: csrf))
        }
    }
}
