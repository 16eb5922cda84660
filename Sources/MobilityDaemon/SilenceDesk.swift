import MobilityModel
import MobilityWire
import StateStore
import Synchronization

/// Care-staff silences (Alertmanager's): taken on `{root}/teams/{team}/commands/silence`, kept in
/// the state store, published retained on `{root}/teams/{team}/silences/{id}`, expired on their
/// own by the daemon's wall clock (``tick(now:)``), each add and expiry in the audit trail.
///
/// The shards ask ``verdict(for:now:)`` for each alert transition (nothing is locked or
/// allocated while no silence is held) and ``withhold(_:_:items:)`` drops the notifications of a
/// silenced transition from its outputs: reminders, and the resolution message (its retained
/// clear stays). The engine is not told; the transition is still recorded, marked `silencedBy`.
///
/// Partitioned mode (``CommandScope``): each team has one *decider*, the instance that owns the
/// partition its id falls in. Only the decider takes the team's commands, commits, announces and
/// expires its silences (audit rows, retained topics); every other instance re-reads the store's
/// silences of the teams it does not decide each tick (``tick(now:)``) and applies them to its
/// own users' transitions, each ending by its own clock.
///
/// Each team it knows (the care-teams file, profiles) has its index retained on
/// `{root}/teams/{team}/silences`: `{"team", "silences": [ids]}`, so that a client can tell a team
/// that exists and that it may read from a misspelt or forbidden one (`mobilityctl alerts
/// --team`), and which silences are in force; cleared when the team is no longer known, also
/// after a restart (the store keeps which teams were announced). Partitioned, each instance
/// announces the teams of its own users and clears none (another instance may still know the team).
///
/// Sendability: the silences are in a Mutex; `held` counts them for the lock-free fast path.
final class SilenceDesk: Sendable {
    let layout: TopicLayout
    private let store: any StateBackend
    private let sink: any OutputSink
    private let teams: CareTeams
    private let log: Logger
    /// The label names the loaded rules produce (for `unknown_label`).
    private let labelNames: @Sendable () -> Set<String>
    /// Publishes a refusal (not retained, not in the outbox).
    private let publishNow: @Sendable (_ topic: String, _ payload: [UInt8]) -> Void
    private let commandsPrefix: String
    /// Which teams' silences this run decides (partitioned mode: those whose partition it owns).
    private let scope: CommandScope

    private struct Book {
        /// Pending and active silences by team, in the order added.
        var byTeam: [String: [Silence]] = [:]
        /// The state last published retained for each silence (nil: not yet since this start).
        var announced: [String: Silence.State] = [:]
        var counts: [String: Int] = [:]
        /// The teams' indexes last published (team → silence ids), and the care teams' version they followed.
        var indexed: [String: [String]] = [:]
        /// The teams whose index an earlier run published (the store's `silence_index_teams`):
        /// cleared at the first tick unless still known, so that a team removed while mobilityd
        /// was stopped does not keep its index retained.
        var indexedBefore: Set<String> = []
        /// The teams last written to the store as published, nil before the first write.
        var savedIndexed: Set<String>?
        var teamsVersion = -1
        var knownTeams: Set<String> = []
        var marked = 0
        var withheld = 0
    }
    private let book = Mutex(Book())
    private let held = Atomic<Int>(0)

    init(
        layout: TopicLayout, store: any StateBackend, sink: any OutputSink, teams: CareTeams, log: Logger,
        scope: CommandScope = .everything, labelNames: @escaping @Sendable () -> Set<String>,
        publishNow: @escaping @Sendable (String, [UInt8]) -> Void
    ) {
        self.layout = layout
        self.scope = scope
        self.store = store
        self.sink = sink
        self.teams = teams
        self.log = log
        self.labelNames = labelNames
        self.publishNow = publishNow
        commandsPrefix = layout.root + "/teams/"
    }

    /// Reads the stored silences (at start, before the shards run); expired ones are expired by the first ``tick(now:)``.
    func restore() throws {
        let (stored, unreadable) = try store.silences()
        if !unreadable.isEmpty { log.warn("stored silences that no longer parse are ignored", ["ids": unreadable.joined(separator: ",")]) }
        // Partitioned, indexes are never cleared: another instance may still know the team.
        let before = scope.isPartitioned ? [] : try store.meta(Self.indexedTeamsKey)?.split(separator: "\n").map(String.init) ?? []
        book.withLock { b in
            for s in stored { b.byTeam[s.team, default: []].append(s) }
            b.indexedBefore = Set(before.filter(TopicLayout.isValidUser))
        }
        held.store(stored.count, ordering: .relaxed)
    }

    /// The store's metadata key of the teams whose index is published (one a line).
    static let indexedTeamsKey = "silence_index_teams"

    /// Writes the teams whose index is (or is about to be) published, when they changed; false
    /// after logging why it cannot.
    private func saveIndexed(_ teams: Set<String>) -> Bool {
        guard !scope.isPartitioned, book.withLock({ $0.savedIndexed }) != teams else { return true }
        do { try store.setMeta(Self.indexedTeamsKey, teams.sorted().joined(separator: "\n")) } catch {
            log.warn("cannot store which teams' silence indexes are published; published at the next tick", ["error": "\(error)"])
            return false
        }
        book.withLock { $0.savedIndexed = teams }
        return true
    }

    /// The command subscription: a team account's topic and every person's under it.
    var subscription: String { commandsPrefix + "+/commands/silence/#" }
    /// Where a team's silence is published retained while pending or active.
    func topic(team: String, id: String) -> String { commandsPrefix + team + "/silences/" + id }
    /// Where the audit trail is published.
    var auditTopic: String { layout.root + "/audit" }
    /// Where a team's index of silences is published retained.
    func indexTopic(team: String) -> String { commandsPrefix + team + "/silences" }

    /// The team of a command topic `{root}/teams/{team}/commands/silence[/{login}]`, nil for any
    /// other topic; `.some(nil)` for a command topic whose team segment is not a valid id.
    func commandTeam(_ topic: String) -> String?? {
        StaffCommandTopic.parse(topic, prefix: commandsPrefix, kind: "silence").map(\.team)
    }

    /// A command message (on the subscriber's thread; `now` the wall clock): checked, then
    /// committed with its audit row and published, or refused with a reason; left to the team's
    /// decider when this run is not it. Returns what became of it (nil: not a silence command).
    @discardableResult
    func received(topic: String, payload: [UInt8], now: Timestamp) -> StaffOutcome? {
        guard let team = commandTeam(topic) else { return nil }
        guard let team else {
            guard scope.decides(team: nil) else { return count("other_instance") }
            return refuse(.init(reason: "invalid_field", message: "the team in the topic is 1-64 of A-Z a-z 0-9 _ -"), team: nil)
        }
        guard scope.decides(team: team) else { return count("other_instance") }
        // Partitioned, the decider sees only its own users' profiles: the broker's ACL on the
        // team's command topic is the check (a silence of a team without users silences nothing).
        let login = StaffCommandTopic.parse(topic, prefix: commandsPrefix, kind: "silence")?.login
        if let login, !StaffCommandTopic.isValidLogin(login) {
            return refuse(.init(reason: "invalid_field", message: StaffCommandTopic.invalidLoginMessage), team: team)
        }
        let command = SilenceCommand.parse(team: team, payload: payload, now: now, labelNames: labelNames(), login: login)
        guard scope.isPartitioned || teams.knows(team: team) else {
            // With the silence's id when the command has one, so that its sender takes the answer.
            let id: String? =
                switch command {
                case .failure(let r): r.silence
                case .success(.add(let s)): s.id
                case .success(.expire(let id, _)): id
                }
            let message = "no user belongs to team \(team) (the care-teams file or a profile names it)"
            return refuse(.init(reason: "unknown_team", message: message, silence: id), team: team)
        }
        switch command {
        case .failure(let r): return refuse(r, team: team)
        case .success(.add(let s)):
            // A silence naming another team's patient would silence nothing (it applies to its
            // team's users only): refused as an acknowledgement of that patient's alert is, in the
            // same words for a patient of another team and a user nobody knows. Partitioned, the
            // decider does not see every user's teams: the broker's ACL is the check there.
            if !scope.isPartitioned, s.matchers.contains(where: { $0.name == "user" && $0.isEqual && !$0.isRegex && !teams.user($0.value, belongsTo: team) }) {
                return refuse(.init(reason: "unknown_user", message: "team \(team) has no patient with this id", silence: s.id), team: team)
            }
            return add(s, now: now)
        case .success(.expire(let id, let by)): return expire(id: id, team: team, by: by, now: now)
        }
    }

    /// A command too large to be copied (over `--max-payload-bytes`).
    func oversized(topic: String, size: Int) {
        guard let team = commandTeam(topic) else { return }
        guard scope.decides(team: team) else { count("other_instance"); return }
        refuse(.init(reason: "payload_too_large", message: "a silence command is at most \(SilenceCommand.maxPayloadBytes) bytes, got \(size)"), team: team)
    }

    /// A command published retained: refused, never applied (the broker delivers a retained
    /// message again on every reconnect, which would repeat it).
    func retained(topic: String) {
        guard let team = commandTeam(topic) else { return }
        guard scope.decides(team: team) else { count("other_instance"); return }
        refuse(.init(reason: "retained_input", message: CommandScope.retainedMessage), team: team)
    }

    private func add(_ s: Silence, now: Timestamp) -> StaffOutcome {
        let (exists, teamCount) = book.withLock { b in (b.byTeam[s.team]?.contains { $0.id == s.id } ?? false, b.byTeam[s.team]?.count ?? 0) }
        if exists { return count("duplicate") }  // a re-delivered command: the silence stands
        guard teamCount < Silence.maxPerTeam else {
            return refuse(
                .init(reason: "too_many_silences", message: "team \(s.team) has \(Silence.maxPerTeam) pending or active silences; expire one first"),
                team: s.team)
        }
        let equal = { (name: String) in s.matchers.first { $0.name == name && $0.isEqual && !$0.isRegex }?.value ?? "" }
        let entry = AuditEntry(
            at: now, action: "silence", actor: s.createdBy, team: s.team, user: equal("user"), rule: equal("rule"), subject: s.id,
            note: s.comment, detail: SilenceDesk.detail(s))
        let state = s.state(at: now), topic = topic(team: s.team, id: s.id), audit = [auditTopic, layout.teamAudit(s.team)]
        let items: [StateStore.OutboxItem]
        do {
            items = try store.recordSilence(s, audit: entry) { e in
                [.init(topic: topic, payload: Array(s.json(state: state).utf8), retain: true)]
                    + audit.map { .init(topic: $0, payload: Array(e.json.utf8), retain: false) }
            }
        } catch {
            if isFencedWrite(error) {
                log.warn("a silence was fenced: another instance decides its team now and answers it")
                return count("other_instance")
            }
            log.error("cannot store a silence; refused", ["error": "\(error)"])
            return refuse(.init(reason: "store_unavailable", message: "the daemon could not store the silence; try again", silence: s.id), team: s.team)
        }
        book.withLock { b in
            b.byTeam[s.team, default: []].append(s)
            b.announced[s.id] = state
            b.counts["accepted", default: 0] += 1
        }
        held.add(1, ordering: .relaxed)
        _ = sink.publish(items)
        return .accepted
    }

    private func expire(id: String, team: String, by: String, now: Timestamp) -> StaffOutcome {
        // Another team's silence is "unknown" to this team: its id says nothing about it.
        guard let s = book.withLock({ $0.byTeam[team]?.first { $0.id == id } }) else {
            return refuse(.init(reason: "unknown_silence", message: "team \(team) has no pending or active silence with this id", silence: id), team: team)
        }
        if let error = remove(s, by: by, now: now) {
            if isFencedWrite(error) { return count("other_instance") }
            return refuse(.init(reason: "store_unavailable", message: "the daemon could not store the expiry; try again", silence: id), team: team)
        }
        return count("accepted")
    }

    /// Commits a silence's expiry (audit row, cleared retained topic) and forgets it; the store's
    /// error when it refused (nil: done).
    @discardableResult
    private func remove(_ s: Silence, by: String, now: Timestamp) -> (any Error)? {
        var ended = s
        if ended.endsAt > now { ended.endsAt = now }
        let entry = AuditEntry(
            at: now, action: "expire", actor: by, team: s.team, user: "", rule: "", subject: s.id, note: nil, detail: SilenceDesk.detail(ended))
        let topic = topic(team: s.team, id: s.id), audit = [auditTopic, layout.teamAudit(s.team)]
        let items: [StateStore.OutboxItem]
        do {
            items = try store.expireSilence(id: s.id, audit: entry) { e in
                [.init(topic: topic, payload: [], retain: true)] + audit.map { .init(topic: $0, payload: Array(e.json.utf8), retain: false) }
            }
        } catch {
            log.error("cannot store a silence's expiry; it stays in force until the store takes it", ["error": "\(error)"])
            return error
        }
        let removed = book.withLock { b -> Bool in
            b.announced[s.id] = nil
            guard let k = b.byTeam[s.team]?.firstIndex(where: { $0.id == s.id }) else { return false }
            b.byTeam[s.team]!.remove(at: k)
            if b.byTeam[s.team]!.isEmpty { b.byTeam[s.team] = nil }
            return true
        }
        if removed { held.subtract(1, ordering: .relaxed) }
        _ = sink.publish(items)
        return nil
    }

    /// The wall clock's tick (every second): expires the silences whose `endsAt` has come (audit
    /// `expire` by `mobilityd`), and publishes the state of each silence whose state changed
    /// (pending → active) or was not published since this start. Partitioned: first takes the
    /// other deciders' silences from the store; it expires and publishes only its own teams'.
    func tick(now: Timestamp) {
        if scope.isPartitioned { refresh(now: now) }
        publishIndexes()
        guard held.load(ordering: .relaxed) > 0 else { return }
        let (ended, changed) = book.withLock { b -> ([Silence], [(Silence, Silence.State)]) in
            var ended: [Silence] = [], changed: [(Silence, Silence.State)] = []
            for (team, list) in b.byTeam where scope.decides(team: team) {
                for s in list {
                    let st = s.state(at: now)
                    if st == .expired { ended.append(s) } else if b.announced[s.id] != st { changed.append((s, st)) }
                }
            }
            return (ended, changed)
        }
        for s in ended { remove(s, by: "mobilityd", now: now) }
        guard !changed.isEmpty else { return }
        var items = changed.map { s, st in StateStore.OutboxItem(topic: topic(team: s.team, id: s.id), payload: Array(s.json(state: st).utf8), retain: true) }
        do {
            let ids = try store.commit(users: [], outbox: items, acknowledged: [], history: [])
            for k in items.indices { items[k].id = ids[k] }
        } catch {
            log.warn("cannot store a silence's state change; published at the next tick", ["error": "\(error)"])
            return
        }
        book.withLock { b in for (s, st) in changed where b.byTeam[s.team]?.contains(where: { $0.id == s.id }) == true { b.announced[s.id] = st } }
        _ = sink.publish(items)
    }

    /// Publishes (committed first, retained) the index of each known team whose silences changed
    /// since it was last published, and clears the index of a team no longer known.
    private func publishIndexes() {
        let version = teams.version
        let names = book.withLock { $0.teamsVersion } == version ? nil : teams.teamNames()
        let (changed, gone) = book.withLock { b -> ([(String, [String])], [String]) in
            if let names {
                b.knownTeams = names
                b.teamsVersion = version
            }
            var changed: [(String, [String])] = []
            for team in b.knownTeams.sorted() {
                let ids = (b.byTeam[team] ?? []).map(\.id).sorted()
                if b.indexed[team] != ids { changed.append((team, ids)) }
            }
            let gone = scope.isPartitioned ? [] : Set(b.indexed.keys).union(b.indexedBefore).subtracting(b.knownTeams).sorted()
            return (changed, gone)
        }
        guard !changed.isEmpty || !gone.isEmpty else { return }
        // Every team about to be announced is in the store first: one removed later, even while
        // mobilityd is stopped, has its index cleared by the next run.
        let announcing = book.withLock { b in Set(b.indexed.keys).union(b.indexedBefore) }.union(changed.map(\.0)).union(gone)
        guard saveIndexed(announcing) else { return }
        var items = changed.map { team, ids in
            var w = JSONWriter()
            w.beginObject()
            w.string("team", team)
            w.beginArray("silences")
            for id in ids { w.string(nil, id) }
            w.endArray()
            w.endObject()
            return StateStore.OutboxItem(topic: indexTopic(team: team), payload: Array(w.text.utf8), retain: true)
        }
        items += gone.map { StateStore.OutboxItem(topic: indexTopic(team: $0), payload: [], retain: true) }
        do {
            let ids = try store.commit(users: [], outbox: items, acknowledged: [], history: [])
            for k in items.indices { items[k].id = ids[k] }
        } catch {
            log.warn("cannot store the teams' silence indexes; published at the next tick", ["error": "\(error)"])
            return
        }
        book.withLock { b in
            for (team, ids) in changed { b.indexed[team] = ids }
            for team in gone {
                b.indexed[team] = nil
                b.indexedBefore.remove(team)
            }
        }
        _ = sink.publish(items)
        if !gone.isEmpty { _ = saveIndexed(book.withLock { b in Set(b.indexed.keys).union(b.indexedBefore) }) }
    }

    /// Partitioned mode: replaces the silences of the teams this run does not decide with the
    /// store's (their deciders commit them there), leaving out those ended by this run's clock.
    /// One read a tick; a store that cannot be read leaves them as they were (each still ends by
    /// its `endsAt`: ``verdict(for:now:)`` applies active silences only).
    private func refresh(now: Timestamp) {
        let stored: [Silence]
        do { stored = try store.silences().silences } catch {
            if refreshFailing.exchange(true, ordering: .relaxed) == false {
                log.warn("cannot read the other instances' silences; keeping those known", ["error": "\(error)"])
            }
            return
        }
        if refreshFailing.exchange(false, ordering: .relaxed) { log.info("the other instances' silences are readable again") }
        var others: [String: [Silence]] = [:]
        for s in stored where !scope.decides(team: s.team) && s.state(at: now) != .expired { others[s.team, default: []].append(s) }
        book.withLock { b in
            for team in b.byTeam.keys where !scope.decides(team: team) && others[team] == nil { b.byTeam[team] = nil }
            for (team, list) in others { b.byTeam[team] = list }
            // Under the lock, so that an add of this run's own is never counted out.
            held.store(b.byTeam.values.reduce(0) { $0 + $1.count }, ordering: .relaxed)
        }
    }
    private let refreshFailing = Atomic<Bool>(false)

    /// The pending and active silences of `teams` (the console lists them), in the order added.
    func silences(ofTeams teams: [String]) -> [Silence] {
        book.withLock { b in teams.flatMap { b.byTeam[$0] ?? [] } }
    }

    /// The silences of those of `user`'s teams that are in `among` (the teams of whoever looks),
    /// active at `now` over an alert of theirs (the console shows who silenced it); another
    /// team's silence is neither shown nor counted, since that team's notifications are its own.
    func silences(over user: String, among: [String], rule: String, severity: Severity, labels: [String: String], now: Timestamp) -> [Silence] {
        let userTeams = teams.teams(of: user).filter(among.contains)
        guard held.load(ordering: .relaxed) > 0, !userTeams.isEmpty else { return [] }
        let pairs = labels.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        return silences(ofTeams: userTeams).filter { $0.state(at: now) == .active && $0.matches(user: user, rule: rule, severity: severity, labels: pairs) }
    }

    /// Which silences are in force for a transition: per team of its user, and for the user
    /// topic (withheld there only when every team of the user silences it). Nil when none.
    struct Verdict: Sendable {
        /// Every silence in force, over the user's teams (the user topic's `silencedBy`).
        var all: [String]
        /// The silences of each team that silences it.
        var byTeam: [String: [String]]
        /// Whether each of the user's teams silences it.
        var everyTeam: Bool
    }

    /// The silences in force for `a` at `now` (wall clock live, event time in replay); nil when
    /// none, and without a lock or an allocation when no silence is held.
    func verdict(for a: AlertTransition, now: Timestamp) -> Verdict? {
        guard held.load(ordering: .relaxed) > 0 else { return nil }
        let userTeams = teams.teams(of: a.user)
        guard !userTeams.isEmpty else { return nil }
        let v = book.withLock { b in SilenceDesk.verdict(for: a, teams: userTeams, silences: b.byTeam, now: now) }
        if v != nil { book.withLock { $0.marked += 1 } }
        return v
    }

    /// The verdict over `silences` (by team) for a user in `teams`: pure, for tests and replay.
    static func verdict(for a: AlertTransition, teams: [String], silences: [String: [Silence]], now: Timestamp) -> Verdict? {
        var all: [String] = [], byTeam: [String: [String]] = [:]
        for t in teams {
            guard let list = silences[t] else { continue }
            for s in list where s.state(at: now) == .active && s.matches(user: a.user, rule: a.rule, severity: a.severity, labels: a.labels) {
                byTeam[t, default: []].append(s.id)
                all.append(s.id)
            }
        }
        if all.isEmpty { return nil }
        return Verdict(all: all, byTeam: byTeam, everyTeam: byTeam.count == teams.count)
    }

    /// Drops the notifications of a silenced transition from its outputs (user topic and team
    /// copies: `a` carries `silencedBy` = ``Verdict/all``): its reminder, or its resolution
    /// message (the retained clear stays). A team copy carries that team's silences only.
    func withhold(_ v: Verdict, _ a: AlertTransition, items: inout [StateStore.OutboxItem]) {
        var dropped = false
        items = items.compactMap { item in
            var item = item
            var ids = v.all, silenced = v.everyTeam
            if item.topic.hasPrefix(commandsPrefix) {
                let team = item.topic.dropFirst(commandsPrefix.count).prefix { $0 != "/" }
                ids = v.byTeam[String(team)] ?? []
                silenced = !ids.isEmpty
            }
            if silenced, a.isRepeat || (a.status.isEnded && !item.retain && !item.payload.isEmpty) {
                dropped = true
                return nil
            }
            if ids != v.all, !item.payload.isEmpty {
                var b = a
                b.silencedBy = ids.isEmpty ? nil : ids
                item.payload = Array(b.json.utf8)
            }
            return item
        }
        if dropped { book.withLock { $0.withheld += 1 } }
    }

    /// What an audit row says a silence covers: its matchers and period.
    static func detail(_ s: Silence) -> String { "\(s.matchersText) from \(s.startsAt) until \(s.endsAt)" }

    /// Counts a command's result; its outcome (`other_instance`, or taken).
    @discardableResult
    private func count(_ result: String) -> StaffOutcome {
        book.withLock { $0.counts[result, default: 0] += 1 }
        return result == "other_instance" ? .otherInstance : .accepted
    }

    /// Publishes a refusal (not retained) and counts it; nothing else changes.
    @discardableResult
    private func refuse(_ r: SilenceCommand.Rejection, team: String?) -> StaffOutcome {
        var w = JSONWriter()
        w.beginObject()
        w.string("command", "silence")
        w.string("reason", r.reason)
        w.string("message", r.message)
        if let s = r.silence { w.string("silence", s) }
        if let team { w.string("team", team) }
        w.endObject()
        count(r.reason)
        publishNow(team.map { commandsPrefix + $0 + "/commands/rejected" } ?? layout.rejectedUnknown, Array(w.text.utf8))
        return .refused(reason: r.reason, message: r.message)
    }

    /// The silence metrics.
    func metrics(into m: inout MetricsText, now: Timestamp) {
        let (counts, marked, withheld, states) = book.withLock { b in
            (b.counts, b.marked, b.withheld, b.byTeam.values.joined().map { $0.state(at: now) })
        }
        m.family(
            "mobilityd_silence_commands_total", "counter",
            "Silence commands, by result (accepted, duplicate, the refusal reason, or other_instance: decided by another instance).")
        for r in ["accepted", "duplicate", "other_instance"] + SilenceCommand.refusals {
            m.sample("mobilityd_silence_commands_total", ["result": r], Double(counts[r] ?? 0))
        }
        m.family("mobilityd_silences", "gauge", "Silences held, by state.")
        m.sample("mobilityd_silences", ["state": "active"], Double(states.filter { $0 == .active }.count))
        m.sample("mobilityd_silences", ["state": "pending"], Double(states.filter { $0 == .pending }.count))
        m.family("mobilityd_alert_transitions_silenced_total", "counter", "Alert transitions a silence was in force for (recorded, marked silencedBy).")
        m.sample("mobilityd_alert_transitions_silenced_total", Double(marked))
        m.family(
            "mobilityd_alert_notifications_silenced_total", "counter", "Silenced transitions whose notifications (reminder, resolution message) were withheld.")
        m.sample("mobilityd_alert_notifications_silenced_total", Double(withheld))
    }
}
