import Dispatch
import Ingest
import MobilityModel
import MobilityWire
import RuleEngine
import StateStore
import Synchronization

/// A care-staff timeline command on its way to the patient's shard: the command, who sends it for
/// which team, and where its answer goes.
struct TimelineRequest: Sendable {
    /// The parsed command.
    var command: TimelineCommand
    /// The member of staff: the command's `by` (MQTT) or the bearer token's name (HTTP).
    var by: String
    /// The team of the command topic, or of the token (empty for a token of every team).
    var team: String
    /// Whether it came over MQTT (a refusal is then published on the team's `commands/rejected`).
    var viaMQTT: Bool
    /// Given once the shard has committed the change or refused it.
    var answer: TimelineAnswer
}

/// The outcome of a ``TimelineRequest``, for the thread that waits for it (the subscriber's, or
/// the report listener's): the numbered audit row of the committed change, or the refusal.
final class TimelineAnswer: Sendable {
    /// What the daemon made of the command.
    enum Outcome: Sendable, Equatable {
        /// Committed: the change's audit row.
        case accepted(AuditEntry)
        /// Refused; nothing changed.
        case refused(TimelineCommand.Refusal)
    }

    private let state = Mutex<(outcome: Outcome?, numbered: AuditEntry?)>((nil, nil))
    private let done = DispatchSemaphore(value: 0)

    /// Notes the audit row as the store numbered it in a commit under way (the commit may still fail).
    func numbered(_ entry: AuditEntry) { state.withLock { $0.numbered = entry } }

    /// Gives the refusal (once; later outcomes are ignored).
    func refuse(_ r: TimelineCommand.Refusal) { give(.refused(r)) }

    /// Gives the accepted outcome with the audit row of the commit that succeeded.
    func committed() {
        guard let entry = state.withLock({ $0.numbered }) else { return }
        give(.accepted(entry))
    }

    private func give(_ o: Outcome) {
        let first = state.withLock { s -> Bool in
            guard s.outcome == nil else { return false }
            s.outcome = o
            return true
        }
        if first { done.signal() }
    }

    /// Waits up to `seconds` for the outcome; nil when none came (the change may still be committed
    /// later, when the store takes writes again).
    func wait(seconds: Double) -> Outcome? {
        _ = done.wait(timeout: .now() + seconds)
        return state.withLock { $0.outcome }
    }
}

/// Care-staff entries on patients' timelines: clinical events and annotations recorded,
/// corrected and retracted on `{root}/teams/{team}/commands/event` (``TimelineCommand``) or over
/// the report listener (`POST /api/v1/users/{u}/events`).
///
/// A command is parsed where it arrives (the subscriber's thread, or the listener's), then the
/// patient's shard checks it against the rules and the engine (``apply(_:ingestor:wall:into:)``)
/// and applies its entry exactly as an item of the patient's `events` topic (so replay, the daemon
/// and a gateway's entries agree). The change is committed in the shard's next commit with its
/// history row (the entry with who entered it and when: the pages and FHIR show it), its audit
/// row and the audit message (on `{root}/audit` and the team's `{root}/teams/{team}/audit`, which
/// is the command's answer), before anything is published. A refusal changes nothing and is
/// answered on the team's `commands/rejected` (MQTT) or in the HTTP response.
final class TimelineDesk: Sendable {
    let layout: TopicLayout
    private let teams: CareTeams
    private let log: Logger
    private let commandsPrefix: String
    /// Which commands this run answers (partitioned mode: those of its users' partitions).
    let scope: CommandScope
    /// Publishes a refusal (not retained, not in the outbox).
    private let publishNow: @Sendable (_ topic: String, _ payload: [UInt8]) -> Void
    private let counts = Mutex<[String: Int]>([:])
    /// The home calendar of each patient whose calendar is not ``defaultCalendar``, as the shards
    /// last committed or restored it: the calendar the engine dates the patient's entries by, read
    /// off the shards' threads (the console's new-entry form).
    private let calendars = Mutex<[String: LocalCalendar]>([:])
    /// The calendar of a patient with no calendar of their own yet (`--time-zone`).
    let defaultCalendar: LocalCalendar

    /// How long the subscriber or an HTTP request waits for the shard's answer.
    static let answerSeconds = 10.0

    init(
        layout: TopicLayout, teams: CareTeams, log: Logger, scope: CommandScope = .everything, defaultCalendar: LocalCalendar = .utc,
        publishNow: @escaping @Sendable (String, [UInt8]) -> Void
    ) {
        self.layout = layout
        self.defaultCalendar = defaultCalendar
        self.teams = teams
        self.log = log
        self.scope = scope
        self.publishNow = publishNow
        commandsPrefix = layout.root + "/teams/"
    }

    /// The command subscription: a team account's topic and every person's under it.
    var subscription: String { commandsPrefix + "+/commands/event/#" }

    /// The team of a command topic `{root}/teams/{team}/commands/event[/{login}]`, nil for any
    /// other topic; `.some(nil)` for a command topic whose team segment is not a valid id.
    func commandTeam(_ topic: String) -> String?? {
        StaffCommandTopic.parse(topic, prefix: commandsPrefix, kind: "event").map(\.team)
    }

    /// A command message (on the subscriber's thread): parsed and handed to `deliver` (which
    /// returns once the shard has taken it), or refused; left to another instance when ``scope`` says so.
    func received(topic: String, payload: [UInt8], deliver: (TimelineRequest) -> Void) {
        guard let team = commandTeam(topic) else { return }
        guard let team else {
            guard scope.decides(team: nil) else { return count("other_instance") }
            return refuse(.init("invalid_field", "the team in the topic is 1-64 of A-Z a-z 0-9 _ -"), team: nil, viaMQTT: true)
        }
        let login = StaffCommandTopic.parse(topic, prefix: commandsPrefix, kind: "event")?.login
        if let login, !StaffCommandTopic.isValidLogin(login) {
            guard scope.decides(team: team) else { return count("other_instance") }
            return refuse(.init("invalid_field", StaffCommandTopic.invalidLoginMessage), team: team, viaMQTT: true)
        }
        switch TimelineCommand.parse(payload) {
        case .failure(let r):
            guard scope.decides(team: team) else { return count("other_instance") }
            refuse(r, team: team, viaMQTT: true)
        case .success(let c):
            guard scope.owns(user: c.user) else { return count("other_instance") }
            let actor = StaffCommandTopic.actor(login: login, claimed: c.by)
            if case .failure(let m) = actor {
                return refuse(.init("invalid_field", m.message, id: c.change.id, user: c.user), team: team, viaMQTT: true)
            }
            guard case .success(let by?) = actor else {
                return refuse(.init("missing_field", "missing 'by' (who enters it)", id: c.change.id, user: c.user), team: team, viaMQTT: true)
            }
            deliver(TimelineRequest(command: c, by: by, team: team, viaMQTT: true, answer: TimelineAnswer()))
        }
    }

    /// A command too large to be copied (over `--max-payload-bytes`).
    func oversized(topic: String, size: Int) {
        guard let team = commandTeam(topic) else { return }
        guard scope.decides(team: team) else { return count("other_instance") }
        refuse(.init("payload_too_large", "a timeline command is at most \(TimelineCommand.maxPayloadBytes) bytes, got \(size)"), team: team, viaMQTT: true)
    }

    /// A command published retained: refused, never applied (the broker delivers a retained
    /// message again on every reconnect: a retracted entry would come back, a correction be undone).
    func retained(topic: String) {
        guard let team = commandTeam(topic) else { return }
        guard scope.decides(team: team) else { return count("other_instance") }
        refuse(.init("retained_input", CommandScope.retainedMessage), team: team, viaMQTT: true)
    }

    /// What a command the shard applied leaves to its commit: the history row of the entry (with
    /// its attribution) or of its removal, and the audited change (audit row and announcing outputs).
    struct Applied {
        var history: HistoryRecord
        var change: AuditedChange
    }

    /// Checks a command against the rules and the user's state, and applies it to the engine as an
    /// item of the user's `events` topic (on the user's shard thread; `wall` the daemon's clock of
    /// the batch). Nil when refused: the request is answered and nothing changed (any rejection the
    /// ingestor appended for it is taken out of `out`, as it is no gateway's).
    func apply(_ r: TimelineRequest, ingestor: inout Ingestor, wall: Timestamp, fhir: FHIROutputs?, into out: inout [EngineOutput]) -> Applied? {
        let c = r.command, user = c.user, id = c.change.id
        func no(_ reason: String, _ message: String) -> Applied? {
            refuse(.init(reason, message, id: id, user: user), team: r.team.isEmpty ? nil : r.team, viaMQTT: r.viaMQTT, answer: r.answer)
            return nil
        }
        if !r.team.isEmpty {
            // A team's command is for the team's patients only, and every other patient reads as
            // no patient at all (another team's, one of no team, an id nobody knows), so that a
            // refusal tells nothing of other teams' patients. A team's patient is known (the
            // care-teams file or the profile names them) before any data.
            guard teams.user(user, belongsTo: r.team) else { return no("unknown_user", "team \(r.team) has no patient with this id") }
        } else {
            // A user id nobody has heard of is a typo far more often than a patient yet to sync: no
            // entry makes a user (one the care-teams file lists may be entered before the first sync).
            guard ingestor.engine.calendar(of: user) != nil || teams.assigned[user] != nil else {
                return no("unknown_user", "no data, profile or care-teams entry of this user")
            }
        }
        let program = ingestor.engine.program
        if let bad = c.check(clinicalKinds: program.clinicalKinds, annotationKinds: program.annotationKinds) { return no(bad.reason, bad.message) }
        let held = ingestor.engine.entry(id, of: user)
        switch (c.action, held) {
        case (.add, .some): return no("entry_exists", "the user already holds an entry with this id; correct it or retract it")
        case (.correct, nil), (.retract, nil): return no("unknown_entry", "the user holds no timeline entry with this id")
        default: break
        }
        // Applied as the events topic's item: the same bounds, the same engine call.
        let before = out.count
        ingestor.handle(topic: layout.events(user), parsed: .inbound(user: user, kind: .events), payload: c.change.payload, now: wall, into: &out)
        var rejection: Rejection?
        for o in out[before...] { if case .rejected(_, _, let j) = o { rejection = j } }
        out.removeSubrange(before...)  // an events item produces no other output
        if let rejection { return no(rejection.reason.rawValue, rejection.detail) }

        let attribution = EntryAttribution(by: r.by, team: r.team, at: wall)
        let history: HistoryRecord, detail: String
        var entered: TimelineEvent?
        switch c.change {
        case .record(var e):
            e.entered = attribution
            entered = e
            history = .timeline(user: user, e)
            detail = TimelineDesk.describe(e) + (c.action == .correct ? ", was " + TimelineDesk.describe(held!) : "")
        case .retract:
            history = .retracted(user: user, id: id)
            detail = "retracted " + TimelineDesk.describe(held!)
        }
        let entry = AuditEntry(
            at: wall, action: c.action.rawValue + "_event", actor: r.by, team: r.team, user: user, rule: "", subject: id, note: c.note, detail: detail)
        let topics = [layout.audit] + (r.team.isEmpty ? [] : [layout.teamAudit(r.team)])
        let fhirItems = fhir?.timelineItems(user: user, entry: entered ?? held!, retracted: entered == nil) ?? []
        let answer = r.answer
        count("accepted")
        return Applied(
            history: history,
            change: AuditedChange(entry: entry) { numbered in
                answer.numbered(numbered)
                let json = Array(numbered.json.utf8)
                return topics.map { StateStore.OutboxItem(topic: $0, payload: json, retain: false) } + fhirItems
            })
    }

    /// Notes the home calendars of `users` as the engine holds them (on the shard's thread, after a
    /// commit or a restore): a profile's or a sample's zone changes the days a patient's entries
    /// are dated by.
    func noteCalendars(of users: some Sequence<String>, in engine: Engine) {
        let fallback = engine.configuration.defaultCalendar
        calendars.withLock { known in
            for u in users {
                if let c = engine.calendar(of: u), c != fallback { known[u] = c } else if !known.isEmpty { known[u] = nil }
            }
        }
    }

    /// The patient's own today at `now` (the day of `now` in their home zone): the latest day the
    /// daemon takes a new entry of theirs to start on, so the day a new-entry form offers first.
    func today(of user: String, at now: Timestamp) -> DayNumber {
        (calendars.withLock { $0[user] } ?? defaultCalendar).day(of: now)
    }

    /// An entry in the audit trail's words: `injury on 2026-02-01`, `heat_wave 2026-03-01..2026-03-05`.
    static func describe(_ e: TimelineEvent) -> String {
        e.firstDay == e.lastDay
            ? "\(e.kind) on \(CivilDate(dayNumber: e.firstDay))"
            : "\(e.kind) \(CivilDate(dayNumber: e.firstDay))..\(CivilDate(dayNumber: e.lastDay))"
    }

    private func count(_ result: String) { counts.withLock { $0[result, default: 0] += 1 } }

    /// Refuses a command: counted, answered to whoever waits, and over MQTT published (not
    /// retained) on the team's `commands/rejected`; nothing else changes.
    func refuse(_ r: TimelineCommand.Refusal, team: String?, viaMQTT: Bool, answer: TimelineAnswer? = nil) {
        count(r.reason)
        answer?.refuse(r)
        guard viaMQTT else { return }
        var w = JSONWriter()
        w.beginObject()
        w.string("command", "event")
        w.string("reason", r.reason)
        w.string("message", r.message)
        if let id = r.id { w.string("id", id) }
        if let u = r.user { w.string("user", u) }
        if let team { w.string("team", team) }
        w.endObject()
        publishNow(team.map { commandsPrefix + $0 + "/commands/rejected" } ?? layout.rejectedUnknown, w.bytes)
    }

    /// The timeline command metrics.
    func metrics(into m: inout MetricsText) {
        let counts = counts.withLock { $0 }
        m.family(
            "mobilityd_timeline_commands_total", "counter",
            "Care-staff timeline commands (add, correct, retract), by result (accepted, the refusal reason, or other_instance: answered by the instance that owns the user)."
        )
        for r in ["accepted", "other_instance"] + TimelineCommand.reasons {
            m.sample("mobilityd_timeline_commands_total", ["result": r], Double(counts[r] ?? 0))
        }
    }
}
