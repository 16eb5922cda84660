import CareReports
import HTTPEndpoint
import MobilityModel
import MobilityWire
import StateStore

extension Daemon {
    /// The patients' timelines over the report listener:
    ///
    /// - `POST /api/v1/users/{u}/events` with a ``TimelineCommand`` as the JSON body (the same
    ///   JSON as `{root}/teams/{team}/commands/event`), for a token granted `write=events` (403
    ///   for another): records, corrects or retracts an entry,
    ///   attributed to the bearer token's name (a body's `by`, if any, must be that name) and to the
    ///   token's team that holds the user (none for a token of every team). Answered once the
    ///   change is committed: 200 with the audit row, or the refusal with its reason (`reason`
    ///   member): 400, 404 (`unknown_entry`, `unknown_user`; a user the token may not read, as on every route),
    ///   409 (`entry_exists`), 503 (`store_unavailable`, no answer in time, or a patient another
    ///   instance holds).
    /// - `GET /api/v1/users/{u}/events`: the recorded timeline, each entry with who entered it.
    func mountTimelineAPI(
        _ router: inout HTTPRouter, store: any StateBackend, desk: TimelineDesk, deliver: @escaping @Sendable (TimelineRequest) -> Void
    ) {
        let careTeams = careTeams
        router.post("/api/v1/users/{u}/events", access: .write("events")) { request in
            guard let u = careTeams.readableUser(request), let principal = request.principal else { return .apiError(.notFound, "no such user") }
            let command: TimelineCommand
            switch TimelineCommand.parse(request.body) {
            case .failure(let r):
                desk.refuse(r, team: nil, viaMQTT: false)
                return .apiError(r.reason == "payload_too_large" ? .payloadTooLarge : .badData, r.message, reason: r.reason)
            case .success(let c): command = c
            }
            guard command.user == u else {
                return .apiError(.badData, "the body's 'user' is not the user of the path", reason: "invalid_field")
            }
            if let by = command.by, by != principal {
                return .apiError(.badData, "over HTTP an entry is attributed to the token's name; leave 'by' out or give that name", reason: "invalid_field")
            }
            guard desk.scope.owns(user: u) else {
                return .apiError(.unavailable, "another instance holds this user's partition; send it to that instance", reason: "other_instance")
            }
            // The token's team that holds the user (readableUser made sure there is one), none for an unscoped token.
            let team = request.teams.flatMap { scope in careTeams.teams(of: u).first(where: scope.contains) } ?? ""
            let r = TimelineRequest(command: command, by: principal, team: team, viaMQTT: false, answer: TimelineAnswer())
            deliver(r)
            switch r.answer.wait(seconds: TimelineDesk.answerSeconds) {
            case .accepted(let entry)?: return .apiSuccess(data: entry.json)
            case .refused(let f)?:
                let type: APIErrorType
                switch f.reason {
                case "unknown_entry", "unknown_user": type = .notFound
                case "entry_exists": type = .conflict
                case "store_unavailable": type = .unavailable
                default: type = .badData
                }
                return .apiError(type, f.message, reason: f.reason)
            case nil:
                return .apiError(
                    .unavailable,
                    "not committed within \(Int(TimelineDesk.answerSeconds)) s (the state store may be refusing writes; the change is committed when it takes them): check GET /api/v1/users/\(u)/events before sending it again",
                    reason: "store_unavailable")
            }
        }
        router.get("/api/v1/users/{u}/events") { request in
            guard let u = careTeams.readableUser(request) else { return .apiError(.notFound, "no such user") }
            return HistoryAPI.answer { () throws -> HTTPResponse in
                let h = try store.history(of: u, from: .min, through: .max)
                return .apiSuccess(data: HistoryAPI.timelineJSON(h))
            }
        }
    }
}
