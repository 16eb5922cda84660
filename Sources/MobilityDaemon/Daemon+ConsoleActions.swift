import CareReports
import HTTPEndpoint
import MobilityModel
import MobilityWire

extension Daemon {
    /// The console's actions, each a form posted with the session's CSRF token and taken by the
    /// same desk as the command on the signed-in login's own MQTT topic
    /// (`{root}/teams/{team}/commands/{ack,silence,event}/{login}`, `team` the person's first team
    /// that holds the patient, or for an expiry the one of the person's teams that holds the
    /// silence): the login is who acted in the audit row, the acknowledgement's
    /// `by`, the silence's `createdBy` and the entry's `entered.by`. Taken: 303 back to the patient
    /// page, which says so; refused: the page again with the daemon's own reason, nothing changed.
    ///
    /// - `POST /console/patients/{u}/ack`: `alert`, `note`
    /// - `POST /console/patients/{u}/silence`: `rule` (empty: every alert of the patient), `hours`, `comment`
    /// - `POST /console/patients/{u}/silence/expire`: `id`
    /// - `POST /console/patients/{u}/events`: `action` (add, correct, retract), `id` (correct, retract),
    ///   `kind`, `first`, `last` (optional), `note` (the entry's), `why` (the audit's)
    func mountConsoleActions(_ router: inout HTTPRouter, desks: ConsoleDesks) {
        router.postForm("/console/patients/{u}/ack") { [self] request in
            consoleAct(request, desks: desks, done: "ack") { u, team, login in
                var w = JSONWriter()
                w.beginObject()
                w.string("alert", request.form.value("alert") ?? "")
                w.string("user", u)
                if let note = request.form.value("note"), !note.isEmpty { w.string("note", note) }
                w.endObject()
                var answered: StaffOutcome?
                let topic = desks.acknowledgements.layout.root + "/teams/\(team)/commands/ack/\(login)"
                let refused = desks.acknowledgements.received(topic: topic, payload: w.bytes) { c in
                    let receipt = StaffReceipt()
                    desks.deliverAcknowledgement(c, receipt)
                    answered = receipt.wait(seconds: TimelineDesk.answerSeconds)
                }
                return refused ?? answered
            }
        }
        router.postForm("/console/patients/{u}/silence") { [self] request in
            consoleAct(request, desks: desks, done: "silence") { u, team, login in
                let hours = Int(request.form.value("hours") ?? "") ?? 0
                // The form's longest choice (ConsolePage.silenceHours); longer silences are for mobilityctl.
                guard (1...(24 * 7)).contains(hours) else { return .refused(reason: "invalid_field", message: "a silence lasts 1 hour to 7 days") }
                let rule = request.form.value("rule") ?? ""
                var w = JSONWriter()
                w.beginObject()
                w.string("action", "add")
                w.beginArray("matchers")
                for (name, value) in [("user", u)] + (rule.isEmpty ? [] : [("rule", rule)]) {
                    w.beginObject()
                    w.string("name", name)
                    w.string("value", value)
                    w.bool("isRegex", false)
                    w.bool("isEqual", true)
                    w.endObject()
                }
                w.endArray()
                w.string("endsAt", Timestamp(milliseconds: desks.now().milliseconds + Int64(hours) * 3_600_000).description)
                w.string("comment", request.form.value("comment") ?? "")
                w.endObject()
                return desks.silences.received(
                    topic: desks.silences.layout.root + "/teams/\(team)/commands/silence/\(login)", payload: w.bytes, now: desks.now())
            }
        }
        router.postForm("/console/patients/{u}/silence/expire") { [self] request in
            consoleAct(request, desks: desks, done: "expire") { _, team, login in
                var w = JSONWriter()
                w.beginObject()
                w.string("action", "expire")
                w.string("id", request.form.value("id") ?? "")
                w.endObject()
                return desks.silences.received(
                    topic: desks.silences.layout.root + "/teams/\(team)/commands/silence/\(login)", payload: w.bytes, now: desks.now())
            }
        }
        router.postForm("/console/patients/{u}/events") { [self] request in
            let action = request.form.value("action") ?? ""
            return consoleAct(request, desks: desks, done: ["add", "correct", "retract"].contains(action) ? action : "add") { u, team, login in
                Daemon.consoleTimeline(request.form, user: u, team: team, login: login, desks: desks)
            }
        }
    }

    /// Runs an action for the request's patient (404 unless one of the person's teams holds
    /// them) and answers it: 303 to the patient page when taken, the page with the refusal else.
    private func consoleAct(
        _ request: HTTPRequest, desks: ConsoleDesks, done: String, _ act: (_ user: String, _ team: String, _ login: String) -> StaffOutcome?
    ) -> HTTPResponse {
        guard let u = consolePatient(request), let login = request.principal, let seenBy = request.teams else { return Daemon.consoleNotFound(request) }
        let teams = consoleTeams(of: u, seenBy: seenBy)
        // A silence is ended by the team that holds it; anything else by the person's first team of the patient.
        let id = request.form.value("id")
        guard let team = teams.first(where: { t in done == "expire" && desks.silences.silences(ofTeams: [t]).contains { $0.id == id } }) ?? teams.first
        else { return Daemon.consoleNotFound(request) }
        let outcome = act(u, team, login)
        let refusal: String, status: UInt32
        switch outcome {
        case .accepted?: return .text("done\n", status: 303).adding("Location", "/console/patients/\(u)?done=\(done)")
        case .refused(let reason, let message)?:
            refusal = "Refused (\(reason)): \(ConsolePage.FormLabels.wording(message, action: done))."
            status = ["unknown_alert", "unknown_silence", "unknown_entry", "unknown_user"].contains(reason) ? 404 : reason == "store_unavailable" ? 503 : 409
        case .otherInstance?:
            refusal = "Another instance of mobilityd holds this patient's partition and answers for them; nothing was changed here."
            status = 503
        case nil:
            refusal = "No answer within \(Int(TimelineDesk.answerSeconds)) s (the state store may be refusing writes): reload the page before sending it again."
            status = 503
        }
        do {
            var page = try consolePatientPage(u, seenBy: seenBy, desks: desks, now: clock.wall())
            page.refusal = refusal
            return .console(ConsolePage.patient(page, who: login, csrf: request.session?.csrf ?? ""), status: status)
        } catch {
            return Daemon.consoleUnavailable(request)
        }
    }

    /// A timeline command from the console's form: parsed as the MQTT command is, then applied by
    /// the patient's shard (``TimelineDesk/apply(_:ingestor:wall:fhir:into:)``); its outcome.
    static func consoleTimeline(_ form: HTMLForm, user: String, team: String, login: String, desks: ConsoleDesks) -> StaffOutcome? {
        let action = form.value("action") ?? "", kind = form.value("kind") ?? "", first = form.value("first") ?? ""
        let last = form.value("last") ?? ""
        // The page gives a new entry its id (a form sent twice is one entry); a form without one gets a new one.
        let id = form.value("id").flatMap { $0.isEmpty ? nil : $0 } ?? TimelineEvent.newID()
        var w = JSONWriter()
        w.beginObject()
        w.string("action", action)
        w.string("user", user)
        if let why = form.value("why"), !why.isEmpty { w.string("note", why) }
        w.beginObject("entry")
        w.string("id", id)
        if action == "retract" {
            w.bool("retracted", true)
        } else {
            w.string("kind", kind)
            w.string("category", desks.clinicalKinds().contains(kind) ? "clinical" : "annotation")
            if last.isEmpty || last == first {
                w.string("date", first)
            } else {
                w.string("start", first)
                w.string("end", last)
            }
            if let note = form.value("note"), !note.isEmpty { w.string("note", note) }
        }
        w.endObject()
        w.endObject()
        switch TimelineCommand.parse(w.bytes) {
        case .failure(let r):
            desks.timelines.refuse(r, team: team, viaMQTT: false)
            return .refused(reason: r.reason, message: r.message)
        case .success(let command):
            guard desks.timelines.scope.owns(user: user) else { return .otherInstance }
            let r = TimelineRequest(command: command, by: login, team: team, viaMQTT: false, answer: TimelineAnswer())
            desks.deliverTimeline(r)
            switch r.answer.wait(seconds: TimelineDesk.answerSeconds) {
            case .accepted?: return .accepted
            case .refused(let f)?: return .refused(reason: f.reason, message: f.message)
            case nil: return nil
            }
        }
    }
}
