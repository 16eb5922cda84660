import Foundation
import MobilityModel
import MobilityWire
import RuleEngine
import RuleLanguage
import StateStore
import Synchronization

/// Care-staff acknowledgements of firing alert instances, and the audit trail they append to.
///
/// Commands arrive on `{root}/teams/{team}/commands/ack` (parsed on the subscriber's thread, not
/// journalled: the subscriber waits until the user's shard has taken the command). The shard
/// that owns the user checks the instance against its engine, then ``acknowledge(_:instance:now:)``
/// commits the acknowledgement, its audit row and the announcing outputs (the retained firing
/// message with `"acknowledged"`, the audit message) before publishing them. The engine is not
/// told: ``screen(_:)`` drops the reminders (`repeat`) of acknowledged instances from a shard's
/// outputs and forgets an acknowledgement when its instance resolves.
final class AcknowledgementDesk: Sendable {
    let layout: TopicLayout
    private let store: any StateBackend
    private let sink: any OutputSink
    private let publishNow: @Sendable (_ topic: String, _ payload: [UInt8]) -> Void
    let teams: CareTeams
    private let log: Logger
    private let commandsPrefix: String
    /// Which commands this run answers (partitioned mode: those of its users' partitions).
    let scope: CommandScope

    private struct Book {
        /// Acknowledged instances still firing, by id.
        var acknowledged: [String: StoredAcknowledgement] = [:]
        /// The last firing (or reminder) transition of each firing instance the daemon has seen.
        var lastFiring: [String: AlertTransition] = [:]
        /// Recently resolved instance ids (bounded) and their users, to say "resolved" rather
        /// than "unknown" to a team of that user.
        var resolved: [String: String] = [:]
        var resolvedOrder: [String] = []
        var counts: [String: Int] = [:]
        var suppressedReminders = 0
    }
    private let book = Mutex(Book())
    private static let resolvedMemory = 4096

    init(
        layout: TopicLayout, store: any StateBackend, sink: any OutputSink, teams: CareTeams, log: Logger, scope: CommandScope = .everything,
        publishNow: @escaping @Sendable (String, [UInt8]) -> Void
    ) {
        self.layout = layout
        self.scope = scope
        self.store = store
        self.sink = sink
        self.teams = teams
        self.log = log
        self.publishNow = publishNow
        commandsPrefix = layout.root + "/teams/"
    }

    /// Reads the stored acknowledgements (at start, before the shards run).
    func restore() throws {
        let stored = try store.alertAcknowledgements()
        book.withLock { b in for a in stored { b.acknowledged[a.alert] = a } }
    }

    /// The command subscription: a team account's topic and every person's under it.
    var subscription: String { commandsPrefix + "+/commands/ack/#" }
    /// Where the audit trail is published (QoS 1, not retained).
    var auditTopic: String { layout.root + "/audit" }
    /// Where a team's refused commands are answered.
    func rejectedTopic(team: String) -> String { commandsPrefix + team + "/commands/rejected" }

    /// The team of a command topic `{root}/teams/{team}/commands/ack[/{login}]`, nil for any
    /// other topic; `.some(nil)` for a command topic whose team segment is not a valid id.
    func commandTeam(_ topic: String) -> String?? {
        StaffCommandTopic.parse(topic, prefix: commandsPrefix, kind: "ack").map(\.team)
    }

    /// A command message: parsed and handed to `deliver` (which returns once the shard has taken
    /// it), or refused with a reason; left to another instance when ``scope`` says so. Returns
    /// what became of it when it was not delivered (nil: delivered, the shard answers).
    @discardableResult
    func received(topic: String, payload: [UInt8], deliver: (AcknowledgementCommand) -> Void) -> StaffOutcome? {
        guard let team = commandTeam(topic) else { return nil }
        guard let team else {
            guard scope.decides(team: nil) else { return leave() }
            return refuse(.init(refusal: .invalidField, message: "the team in the topic is 1-64 of A-Z a-z 0-9 _ -"), team: nil)
        }
        let login = StaffCommandTopic.parse(topic, prefix: commandsPrefix, kind: "ack")?.login
        if let login, !StaffCommandTopic.isValidLogin(login) {
            guard scope.decides(team: team) else { return leave() }
            return refuse(.init(refusal: .invalidField, message: StaffCommandTopic.invalidLoginMessage), team: team)
        }
        switch AcknowledgementCommand.parse(team: team, payload: payload, login: login) {
        case .success(let c):
            guard scope.owns(user: c.user) else { return leave() }
            deliver(c)
            return nil
        case .failure(let r):
            guard scope.decides(team: team) else { return leave() }
            return refuse(r, team: team)
        }
    }

    /// Counts a command another instance answers (`result="other_instance"`).
    @discardableResult
    private func leave() -> StaffOutcome {
        book.withLock { $0.counts["other_instance", default: 0] += 1 }
        return .otherInstance
    }

    /// A command too large to be copied (over `--max-payload-bytes`).
    func oversized(topic: String, size: Int) {
        guard let team = commandTeam(topic) else { return }
        guard scope.decides(team: team) else { leave(); return }
        refuse(
            .init(refusal: .payloadTooLarge, message: "an acknowledgement is at most \(AcknowledgementCommand.maxPayloadBytes) bytes, got \(size)"), team: team)
    }

    /// A command published retained: refused, never applied (the broker delivers a retained
    /// message again on every reconnect, which would repeat it).
    func retained(topic: String) {
        guard let team = commandTeam(topic) else { return }
        guard scope.decides(team: team) else { leave(); return }
        refuse(.init(refusal: .retainedInput, message: CommandScope.retainedMessage), team: team)
    }

    /// Publishes a refusal (not retained) and counts it; nothing else changes.
    @discardableResult
    private func refuse(_ r: AcknowledgementCommand.Rejection, team: String?) -> StaffOutcome {
        var w = JSONWriter()
        w.beginObject()
        w.string("command", "ack")
        w.string("reason", r.refusal.rawValue)
        w.string("message", r.message)
        if let a = r.alert { w.string("alert", a) }
        if let u = r.user { w.string("user", u) }
        if let team { w.string("team", team) }
        w.endObject()
        book.withLock { $0.counts[r.refusal.rawValue, default: 0] += 1 }
        publishNow(team.map { rejectedTopic(team: $0) } ?? layout.rejectedUnknown, Array(w.text.utf8))
        return .refused(reason: r.refusal.rawValue, message: r.message)
    }

    /// Acknowledges a command's instance (on the user's shard thread; `instance` from its
    /// engine, nil when no instance fires with that id). Committed, then published.
    @discardableResult
    func acknowledge(_ c: AcknowledgementCommand, instance: (rule: AlertRule, activeSince: Int64, firedAt: Int64)?, now: Timestamp) -> StaffOutcome {
        func no(_ r: AcknowledgementCommand.Refusal, _ m: String) -> StaffOutcome {
            refuse(.init(refusal: r, message: m, alert: c.alert, user: c.user), team: c.team)
        }
        // Whether the team may act comes before whether the alert exists, and every "no" reads
        // the same: another team's patient, a patient of no team, a user nobody knows and an id
        // that never fired are one refusal, so a refusal tells nothing of other teams' patients.
        let unknown = "team \(c.team) has no firing alert instance with this id"
        guard teams.user(c.user, belongsTo: c.team) else { return no(.unknownAlert, unknown) }
        guard let instance else {
            let resolved = book.withLock { $0.resolved[c.alert] == c.user }
            return resolved
                ? no(.alertResolved, "the alert instance has ended (resolved or expired); a new firing has a new id")
                : no(.unknownAlert, unknown)
        }
        let (already, cached) = book.withLock { ($0.acknowledged[c.alert], $0.lastFiring[c.alert]) }
        if let already {
            return no(.alreadyAcknowledged, "already acknowledged by \(already.acknowledgement.by) at \(already.acknowledgement.at)")
        }
        var alert =
            cached ?? (try? store.firingPayload(user: c.user, alert: c.alert)).flatMap { $0.flatMap(AlertTransition.parse) }
            ?? AcknowledgementDesk.minimal(c, instance: instance)
        alert.acknowledged = AlertAcknowledgement(by: c.by, at: now, note: c.note)
        let stored = StoredAcknowledgement(
            alert: c.alert, user: c.user, rule: instance.rule.name, team: c.team,
            acknowledgement: alert.acknowledged!, payload: Array(alert.json.utf8))
        let entry = AuditEntry(
            at: now, action: "acknowledge", actor: c.by, team: c.team, user: c.user, rule: instance.rule.name,
            subject: c.alert, note: c.note)
        // The retained firing message on the user's topic and on each of the user's team topics.
        let topics =
            [layout.alert(c.user, rule: instance.rule.name)] + teams.teams(of: c.user).map { layout.teamAlert($0, user: c.user, rule: instance.rule.name) }
        let audit = auditTopic, teamAudit = layout.teamAudit(c.team)
        let items: [StateStore.OutboxItem]
        do {
            items = try store.recordAcknowledgement(stored, audit: entry) { e in
                topics.map { .init(topic: $0, payload: stored.payload, retain: true) }
                    + [audit, teamAudit].map { .init(topic: $0, payload: Array(e.json.utf8), retain: false) }
            }.outbox
        } catch {
            if isFencedWrite(error) {
                log.warn("an acknowledgement was fenced: another instance holds the user's partition now and answers it")
                return leave()
            }
            log.error("cannot store an acknowledgement; refused", ["error": "\(error)"])
            return no(.storeUnavailable, "the daemon could not store the acknowledgement; try again")
        }
        book.withLock { b in
            b.acknowledged[c.alert] = stored
            b.counts["accepted", default: 0] += 1
        }
        _ = sink.publish(items)
        return .accepted
    }

    /// The acknowledgement of a firing instance, if it has one (the console shows who).
    func acknowledgement(of alert: String) -> AlertAcknowledgement? {
        book.withLock { $0.acknowledged[alert]?.acknowledgement }
    }

    /// Drops the reminders of acknowledged instances from a shard's outputs, remembers the last
    /// firing transition of each instance, and forgets the acknowledgement of an ended one.
    /// Returns the dropped reminders, marked with their acknowledgement: not published, but the
    /// history records them, so that a weekly report quotes what the alert said that week.
    func screen(_ out: inout [EngineOutput]) -> [AlertTransition] {
        guard out.contains(where: { if case .alert = $0 { true } else { false } }) else { return [] }
        var cleared: [String] = []
        var withheld: [AlertTransition] = []
        book.withLock { b in
            // An acknowledged instance's firing published again (a revision restoring what its
            // rule's retained topic held) keeps its acknowledgement on it.
            for i in out.indices {
                if case .alert(var a) = out[i], a.status == .firing, !a.isRepeat, a.acknowledged == nil, let ack = b.acknowledged[a.id] {
                    a.acknowledged = ack.acknowledgement
                    out[i] = .alert(a)
                }
            }
            out.removeAll { o in
                guard case .alert(let a) = o else { return false }
                switch a.status {
                case .firing:
                    if a.isRepeat, let ack = b.acknowledged[a.id] {
                        b.suppressedReminders += 1
                        var marked = a
                        marked.acknowledged = ack.acknowledgement
                        withheld.append(marked)
                        return true
                    }
                    b.lastFiring[a.id] = a
                case .resolved, .expired:
                    b.lastFiring[a.id] = nil
                    if b.acknowledged.removeValue(forKey: a.id) != nil { cleared.append(a.id) }
                    if b.resolved.updateValue(a.user, forKey: a.id) == nil {
                        b.resolvedOrder.append(a.id)
                        if b.resolvedOrder.count > AcknowledgementDesk.resolvedMemory { b.resolved.removeValue(forKey: b.resolvedOrder.removeFirst()) }
                    }
                }
                return false
            }
        }
        // The resolved transition's outputs replace the acknowledged retained message (cleared).
        do { try store.clearAcknowledgements(cleared) } catch {
            log.warn("cannot forget resolved acknowledgements; they are forgotten at the next resolution or start", ["error": "\(error)"])
        }
        return withheld
    }

    /// A firing transition made from the engine's state alone (no cached or recorded payload:
    /// history off and the daemon restarted since the instance fired): no evidence or details,
    /// the rule's name for a headline, days in UTC (the user's calendar is not at hand here).
    static func minimal(_ c: AcknowledgementCommand, instance: (rule: AlertRule, activeSince: Int64, firedAt: Int64)) -> AlertTransition {
        let since = CivilDate(dayNumber: LocalCalendar.utc.day(of: Timestamp(milliseconds: instance.activeSince)))
        return AlertTransition(
            id: c.alert, rule: instance.rule.name, user: c.user, severity: instance.rule.severity, status: .firing,
            activeSince: Timestamp(milliseconds: instance.activeSince), firedAt: Timestamp(milliseconds: instance.firedAt),
            resolvedAt: nil, day: CivilDate(dayNumber: LocalCalendar.utc.day(of: Timestamp(milliseconds: instance.firedAt))),
            headline: "\(TemplateText.ruleWords(instance.rule.name)) since \(since)", labels: instance.rule.labels, evidence: [], annotations: [],
            activeSinceDay: since)
    }

    /// The acknowledgement metrics.
    func metrics(into m: inout MetricsText) {
        let (counts, suppressed) = book.withLock { ($0.counts, $0.suppressedReminders) }
        m.family(
            "mobilityd_acknowledgements_total", "counter",
            "Alert acknowledgement commands, by result (accepted, the refusal reason, or other_instance: answered by the instance that owns the user).")
        for r in ["accepted", "other_instance"] + AcknowledgementCommand.Refusal.allCases.map(\.rawValue) {
            m.sample("mobilityd_acknowledgements_total", ["result": r], Double(counts[r] ?? 0))
        }
        m.family("mobilityd_alert_reminders_acknowledged_total", "counter", "Reminders (repeat) not sent because their instance is acknowledged.")
        m.sample("mobilityd_alert_reminders_acknowledged_total", Double(suppressed))
    }
}
