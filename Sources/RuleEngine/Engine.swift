import MobilityModel
import RuleLanguage

/// Tunables of the engine.
package struct EngineConfiguration: Sendable {
    /// A day is evaluated once `now` passes the next local midnight plus this grace (seconds).
    package var graceSeconds: Int64 = 3600
    /// Samples older than this (relative to now) are rejected as too late (seconds).
    package var allowedLatenessSeconds: Int64 = 7 * 86_400
    /// Samples ending more than this after now are rejected as in the future (clock-skew guard).
    package var maxFutureSeconds: Int64 = 600
    /// The calendar of users without a profile.
    package var defaultCalendar: LocalCalendar = .utc
    /// Whether recording rules produce series outputs.
    package var publishSeries = true
    /// Timeline entries from the wire may start at most this many days before the user's today
    /// (`date_out_of_range`); the days an entry makes the engine republish are bounded by the
    /// history it still holds, whatever its date.
    package var maxEventAgeDays: Int = 730
    /// The most timeline entries (clinical events and annotations) one user may hold; a new one
    /// beyond is refused (`too_many_entries`), replacing one by id still works.
    package var maxTimelineEntries: Int = 500
    /// The most deleted sample ids (``Tombstone``s) one user's state remembers; beyond, the
    /// oldest eighth is forgotten. 16 bytes each: at most 32 KiB a user.
    package var maxTombstones: Int = 2048
    /// How many closed days back a revision re-evaluates the user's alert states: a timeline
    /// entry, late sample or deletion dated on a closed day rolls the alert states back to that
    /// day (at most this many days before the last closed day) and evaluates the days since
    /// again. Retention keeps the history those days' windows read. 0: alerts are never
    /// re-evaluated (series still are republished).
    package var revisionDays: Int = 14
    /// Fold days past the allowed lateness into daily-input values and drop history no rule can
    /// reach any more. Off only to test that folding and compaction change nothing.
    package var retention = true

    /// The defaults.
    package init() {}
}

/// Something the engine asks the outside world to publish.
package enum EngineOutput: Hashable, Sendable {
    case alert(AlertTransition)
    case series(SeriesPoint)
    case rejected(user: String?, topic: String, Rejection)
}

/// What happened to an ingested sample.
package enum IngestOutcome: Hashable, Sendable {
    case accepted
    /// Already seen (same id): harmless re-delivery.
    case duplicate
    /// Replaced an older version with the same sync identifier.
    case superseded
    /// An older sync version than the one stored: ignored.
    case stale
    /// Its id was deleted before it arrived (a ``Tombstone``): dropped. A newer sync version
    /// still replaces the older one it supersedes, as it would have before its deletion.
    case deleted
    case rejected(Rejection)
}

/// The rule engine: per-user state (open days raw, older days folded), windows, rules and alert state machines.
///
/// Pure: no I/O, no clock. Every call takes `now` (event or wall time) and appends what must be
/// published to `out`. One engine is owned by one shard.
package struct Engine: Sendable {
    /// The checked rules.
    package var program: Program { closer.program }
    /// Tunables.
    package var configuration: EngineConfiguration {
        didSet {
            closer = DayCloser(program: closer.program, configuration: configuration)
            let firing = evaluator.firing
            evaluator = Evaluator(rules: closer)
            evaluator.firing = firing
        }
    }
    /// The alert names in rule order: the array every user's state shares (pass it to the state
    /// store's `load` so that restored states share it too).
    package var alertNames: [String] { closer.alertNames }
    /// Every user's state, in no particular order.
    package var allStates: [UserState] { states }
    /// How many users the engine holds.
    package var userCount: Int { states.count }
    /// One user's state.
    package func state(of user: String) -> UserState? { slots[user].map { states[$0] } }
    /// One user's calendar (without copying the state).
    package func calendar(of user: String) -> LocalCalendar? { slots[user].map { states[$0].calendar } }
    /// The care teams of a user's last accepted profile (empty for an unknown user or none named).
    package func careTeams(of user: String) -> [String] { slots[user].map { states[$0].careTeams } ?? [] }
    /// How many users have each alert firing (same order as ``alertNames``): a function of the
    /// users' alert states, kept as they change, counted again on reload and restore.
    package var firingCounts: [Int] { evaluator.firing }

    /// ``firingCounts`` computed by visiting every user's alert states.
    package func countFiring() -> [Int] {
        var n = Array(repeating: 0, count: closer.alertNames.count)
        for st in states { for j in st.alertStates.indices where st.alertStates[j].isFiring { n[j] += 1 } }
        return n
    }

    /// User id → index in `states`. Users are never removed.
    private var slots: [String: Int] = [:]
    private var states: [UserState] = []
    /// Slots in user-id order, the order in which ``advance(to:)`` closes days (deterministic
    /// output); `unordered` holds the slots created since it was last merged.
    private var order: [Int] = []
    private var unordered: [Int] = []
    /// The last user looked up: consecutive calls for one user (ingest, then advance) skip the hash.
    private var lastUser = ""
    private var lastSlot = -1

    @inline(__always)
    private mutating func slot(_ id: String, create: Bool) -> Int? {
        if lastSlot >= 0, lastUser == id { return lastSlot }
        if let k = slots[id] {
            lastUser = id
            lastSlot = k
            return k
        }
        guard create else { return nil }
        var st = UserState(user: id, calendar: configuration.defaultCalendar)
        st.alignAlerts(to: closer.alertNames)
        let k = insert(st)
        lastUser = id
        lastSlot = k
        return k
    }

    /// Adds a user not in the table yet; returns its slot.
    private mutating func insert(_ st: consuming UserState) -> Int {
        let k = states.count
        slots[st.user] = k
        unordered.append(k)
        states.append(st)
        return k
    }
    /// Users whose state changed since the last ``takeTouched()`` (each flagged in its state, so
    /// marking costs no hashing on the hot path).
    private var touchedList: [Int] = []

    /// Returns and clears the set of users whose state changed.
    package mutating func takeTouched() -> Set<String> {
        var users = Set<String>(minimumCapacity: touchedList.count)
        takeTouched(into: &users)
        return users
    }

    /// Adds the users whose state changed to `users` and clears the list (no set built per call).
    package mutating func takeTouched(into users: inout Set<String>) {
        for k in touchedList {
            states[k].touched = false
            users.insert(states[k].user)
        }
        touchedList.removeAll(keepingCapacity: true)
    }

    /// The evaluator, lent to each day close and per-sample rule (one per set of rules, not one a user).
    private var evaluator: Evaluator

    /// The rules and configuration, shared by reference: the hot path copies one pointer, not a `Program`.
    private var closer: DayCloser

    /// Bit m: some alert is triggered by samples of metric m.
    private var sampleMask: UInt64 = 0

    package init(program: Program, configuration: EngineConfiguration = EngineConfiguration()) {
        self.configuration = configuration
        closer = DayCloser(program: program, configuration: configuration)
        evaluator = Evaluator(rules: closer)
        sampleMask = Engine.sampleMask(program)
    }

    private static func sampleMask(_ p: Program) -> UInt64 {
        var m: UInt64 = 0
        for a in p.alerts { if case .sample(let k) = a.trigger { m |= 1 << UInt64(k.rawValue) } }
        return m
    }

    /// Runs `body` on a user's state in place (one hash lookup, no copy), creating it if new, and
    /// marks the user touched.
    mutating func withUser<R>(_ id: String, _ body: (inout UserState) -> R) -> R {
        let k = slot(id, create: true)!
        let r = body(&states[k])
        markTouched(k)
        return r
    }

    @inline(__always) private mutating func markTouched(_ k: Int) {
        if !states[k].touched {
            states[k].touched = true
            touchedList.append(k)
        }
    }

    // MARK: Inputs

    /// Sets a user's home time zone and care teams (from the retained profile; the engine keeps
    /// the teams only to persist them, see ``careTeams(of:)``).
    package mutating func setProfile(user: String, calendar: LocalCalendar, careTeams: [String] = []) {
        withUser(user) { st in
            st.calendar = calendar
            st.hasProfile = true
            st.careTeams = careTeams
            st.clearCaches()
        }
    }

    /// Ingests one validated sample. Per-sample rules run at once; daily rules wait for the day to close.
    @discardableResult
    package mutating func ingest(_ s: Sample, user: String, now: Timestamp, into out: inout [EngineOutput]) -> IngestOutcome {
        ingest(s, user: user, now: now, future: now, into: &out)
    }

    /// Ingests one sample judged against two clocks: `now` for lateness, `future` (nil: none) for
    /// the clock-skew guard. In event mode the user's clock may stay behind a sample it holds
    /// (``EventClock``) while the daemon's wall clock bounds the future.
    @discardableResult
    package mutating func ingest(_ s: Sample, user: String, now: Timestamp, future: Timestamp?, into out: inout [EngineOutput]) -> IngestOutcome {
        if let future, s.end.milliseconds > future.milliseconds + configuration.maxFutureSeconds * 1000 {
            return .rejected(Rejection(.inFuture, "sample ends at \(s.end), more than \(configuration.maxFutureSeconds) s after now (\(future))", itemID: s.id))
        }
        if s.end.milliseconds < now.milliseconds - configuration.allowedLatenessSeconds * 1000 {
            return .rejected(
                Rejection(.tooLate, "sample ends at \(s.end), more than \(configuration.allowedLatenessSeconds / 86_400) d before now (\(now))", itemID: s.id))
        }
        let rules: DayCloser? = sampleMask & (1 << UInt64(s.metric.rawValue)) != 0 ? closer : nil
        let k = slot(user, create: true)!
        if !states[k].hasProfile && states[k].lastClosedDay == nil { adoptZone(of: s, k) }
        // A static function on the state in place: a closure here would copy the sample.
        let outcome = Engine.ingest(s, into: &states[k], rules: rules, ev: &evaluator, out: &out)
        markTouched(k)
        return outcome
    }

    /// A user without a profile takes the zone of the first sample that names one (its IANA zone,
    /// else the fixed UTC offset it was written with), while none of the user's days has closed:
    /// the user's days then close at the user's own local midnights, not at UTC's. A phone in Los
    /// Angeles writing its evening samples after UTC midnight would otherwise see each day
    /// evaluated before its evening arrived, so that how the phone batched its samples decided
    /// which days an alert saw. (A fixed offset is an hour off across a DST change: within the
    /// grace. A sample whose offset the calendar already has at its time changes nothing, so a
    /// configured default zone keeps its DST rules.) A profile, when it comes, wins.
    private mutating func adoptZone(of s: Sample, _ k: Int) {
        guard states[k].calendar == configuration.defaultCalendar else { return }
        // A `Z` timestamp names no zone (the home zone decides its day); an offset the calendar
        // already has at that instant: the calendar, with its DST rules, fits.
        if s.timeZone == nil && (s.utcOffset == 0 || Int64(s.utcOffset) == states[k].calendar.offset(at: s.end)) { return }
        let zone = s.timeZone.flatMap(LocalCalendar.cached) ?? LocalCalendar.cached(utcOffsetSeconds: Int(s.utcOffset))
        guard let cal = zone, cal != states[k].calendar else { return }
        states[k].calendar = cal
        states[k].clearCaches()
    }

    private static func ingest(
        _ s: Sample, into st: inout UserState, rules: DayCloser?,
        ev: inout Evaluator, out: inout [EngineOutput]
    ) -> IngestOutcome {
        let day = s.localDay(default: st.calendar)
        if let folded = st.lastFoldedDay, day <= folded {
            // Only reachable when the clock went backwards: the day is final.
            return .rejected(Rejection(.tooLate, "sample's day \(CivilDate(dayNumber: day)) is past the allowed lateness", itemID: s.id))
        }
        let id = SampleID(s.id)
        if st.locate(id) != nil { return .duplicate }
        var outcome = IngestOutcome.accepted
        if !s.metadata.isEmpty, let syncID = s.syncIdentifier {
            let sync = SampleID(syncID), version = s.syncVersion ?? 0
            if let k = st.syncIndex.firstIndex(where: { $0.sync == sync }) {
                if version <= st.syncIndex[k].version { return .stale }
                Engine.remove(id: st.syncIndex[k].id, from: &st)
                st.syncIndex[k] = SyncEntry(sync: sync, version: version, id: id)
                outcome = .superseded
            } else {
                st.syncIndex.append(SyncEntry(sync: sync, version: version, id: id))
            }
        }
        if !st.tombstones.isEmpty, st.isTombstoned(id) { return .deleted }
        st.append(StoredValue(id: id, metric: s.metric, value: s.value, end: s.end, provenance: s.provenance), day: day)
        st.noteDay(day)
        if let closed = st.lastClosedDay, day <= closed { st.revisedDays.insert(day) }
        if let rules { Engine.runSampleRules(rules, s, day: day, state: &st, ev: &ev, into: &out) }
        return outcome
    }

    static func remove(id: SampleID, from st: inout UserState) {
        guard let (i, j) = st.locate(id) else { return }
        st.removeValue(day: i, at: j)
        let day = st.openDays[i].day
        if let closed = st.lastClosedDay, day <= closed { st.revisedDays.insert(day) }
    }

    /// Retracts samples by id (HealthKit deletions) and remembers every id as a ``Tombstone``
    /// for the allowed lateness, so that a sample that arrives after its deletion (reordered
    /// across a failover, or re-sent) is dropped instead of coming back. `now` is the user's
    /// clock (nil: none yet); a tombstone is forgotten when the later of its day and the user's
    /// latest day with data folds. Returns how
    /// many held samples were removed.
    @discardableResult
    package mutating func delete(ids: [String], user: String, now: Timestamp? = nil) -> Int {
        let limit = configuration.maxTombstones
        return withUser(user) { st in
            var n = 0
            // The later of the clock's day and the latest day with data: in event mode the clock
            // can stay behind samples it holds (a jump not yet confirmed after a gap).
            let latest = max(st.lastClosedDay ?? .min, st.openDays.last?.day ?? .min, now.map { st.calendar.day(of: $0) } ?? .min)
            let day = latest == .min ? Tombstone.unstamped : latest
            let deleted = ids.map(SampleID.init)
            // The held ones go in one pass over the open values: a scan and a shift per id cost
            // ids × values (a flood of 1 000-id deletions held a shard for a minute).
            var held = Set<SampleID>()
            for id in deleted where st.mightHold(id) { held.insert(id) }
            if !held.isEmpty {
                let (days, removed) = st.removeValues(ids: held)
                n = removed
                for i in days {
                    let d = st.openDays[i].day
                    if let closed = st.lastClosedDay, d <= closed { st.revisedDays.insert(d) }
                }
            }
            st.addTombstones(deleted, day: day, limit: limit)
            return n
        }
    }

    /// Records a clinical event or annotation (replacing one with the same id) from trusted input
    /// (rule tests): no bounds on its date or on the user's number of entries.
    package mutating func record(event e: TimelineEvent, user: String) {
        store(e, user: user, history: e.firstDay)
    }

    /// How far past the user's today an annotation reported ahead may end (days).
    package static let maxAnnotationReachDays: DayNumber = 366

    /// Records a timeline entry from the wire, or refuses it (nothing changes then).
    ///
    /// - `now`: the user's clock (the wall clock, or in event mode the user's event clock; nil
    ///   before the user's first sample in a replay). An entry may start at most
    ///   `maxEventAgeDays` before its local today.
    /// - `latest`: the latest instant the input can vouch for (the daemon's wall clock; nil in a
    ///   replay, which has none). An entry may not start after its local today, with the
    ///   clock-skew guard, and an annotation may end at most ``maxAnnotationReachDays`` after
    ///   the later of its start and that today.
    ///
    /// An entry dated after the samples seen so far (a phone that syncs its samples after the
    /// injury was entered, a clinician who records it the same day) is kept: the days it bounds
    /// have not been evaluated yet. Every date lies in 1900–2099, and a new id must fit under
    /// `maxTimelineEntries`.
    ///
    /// An accepted entry can cost only bounded work: it moves the user's first day back at most
    /// to the first day a sample could still reach, and a clinical event republishes the series
    /// only of days the engine still holds (the rules' look-back plus the allowed lateness).
    package mutating func record(event e: TimelineEvent, user: String, now: Timestamp?, latest: Timestamp?) -> Rejection? {
        let st = slots[user].map { states[$0] }
        let cal = st?.calendar ?? configuration.defaultCalendar
        func refuse(_ why: String) -> Rejection {
            let range =
                e.firstDay == e.lastDay
                ? "\(CivilDate(dayNumber: e.firstDay))"
                : "\(CivilDate(dayNumber: e.firstDay))..\(CivilDate(dayNumber: e.lastDay))"
            return Rejection(.dateOutOfRange, "entry dated \(range) " + why, itemID: e.id)
        }
        let calendarRange = CivilDate(year: 1900, month: 1, day: 1).dayNumber...CivilDate(year: 2099, month: 12, day: 31).dayNumber
        guard calendarRange.contains(e.firstDay), calendarRange.contains(e.lastDay) else { return refuse("is outside the years 1900–2099") }
        var reachFrom = e.firstDay
        if let latest {
            let today = cal.day(of: latest.adding(seconds: configuration.maxFutureSeconds))
            if e.firstDay > today { return refuse("starts after today (\(CivilDate(dayNumber: today)))") }
            reachFrom = today
        }
        // An annotation may be reported at its start with its planned end (a heat-wave
        // warning, a trip), up to a year ahead.
        if e.lastDay > reachFrom + Engine.maxAnnotationReachDays {
            return refuse(
                "ends more than \(Engine.maxAnnotationReachDays) d after \(latest == nil ? "its start" : "today (\(CivilDate(dayNumber: reachFrom)))")")
        }
        var history: DayNumber?
        if let now {
            let earliest = cal.day(of: now) - DayNumber(configuration.maxEventAgeDays)
            if e.firstDay < earliest {
                return refuse("starts more than \(configuration.maxEventAgeDays) d before the user's today (before \(CivilDate(dayNumber: earliest)))")
            }
            history = max(e.firstDay, cal.day(of: now.adding(seconds: -configuration.allowedLatenessSeconds)) - 1)
        }
        if let st, st.events[e.id] == nil, st.events.count >= configuration.maxTimelineEntries {
            return Rejection(.tooManyEntries, "the user holds \(st.events.count) timeline entries, the limit; replace one by its id", itemID: e.id)
        }
        store(e, user: user, history: history)
        return nil
    }

    /// Stores an entry. `history`: the first day it makes the user's history reach (nil: none).
    ///
    /// An entry that changes what closed days saw (a new or moved entry dated on or before the
    /// last closed day) marks those days revised: their series are republished and the alert
    /// states re-evaluated from the first of them (``EngineConfiguration/revisionDays``). A
    /// re-sent identical entry changes nothing.
    private mutating func store(_ e: TimelineEvent, user: String, history: DayNumber?) {
        let held = heldDays, revisionDays = configuration.revisionDays
        withUser(user) { st in
            let previous = st.events.updateValue(e, forKey: e.id)
            if previous == e { return }
            if let history { st.noteDay(history) }
            st.rebuildBoundaries()
            // Days before the held history have no data to recompute (retention may have dropped
            // it): their series stay as published, with or without retention.
            st.reviseDays(
                from: min(e.firstDay, previous?.firstDay ?? e.firstDay), segments: e.category == .clinical || previous?.category == .clinical,
                held: held, revisionDays: revisionDays)
        }
    }

    // MARK: Time

    /// Closes every user's days that ended before `now - grace`, evaluating daily rules in day order.
    package mutating func advance(to now: Timestamp, into out: inout [EngineOutput]) {
        if !unordered.isEmpty { mergeUnordered() }
        let closer = self.closer
        for k in order where closer.advance(&states[k], to: now, ev: &evaluator, into: &out) { markTouched(k) }
    }

    /// Merges the users added since the last ``advance(to:)`` into `order` (sorting only those,
    /// then one linear merge: no sort of every user id per tick).
    private mutating func mergeUnordered() {
        unordered.sort { states[$0].user < states[$1].user }
        var merged: [Int] = []
        merged.reserveCapacity(order.count + unordered.count)
        var i = 0, j = 0
        while i < order.count || j < unordered.count {
            if j == unordered.count || (i < order.count && states[order[i]].user < states[unordered[j]].user) {
                merged.append(order[i]); i += 1
            } else {
                merged.append(unordered[j]); j += 1
            }
        }
        order = merged
        unordered.removeAll()
    }

    /// Closes one user's finished days.
    package mutating func advance(user id: String, to now: Timestamp, into out: inout [EngineOutput]) {
        let closer = self.closer
        guard let k = slot(id, create: false) else { return }
        if closer.advance(&states[k], to: now, ev: &evaluator, into: &out) { markTouched(k) }
    }

    static func runSampleRules(
        _ rules: DayCloser, _ s: Sample, day: DayNumber, state st: inout UserState, ev: inout Evaluator,
        into out: inout [EngineOutput]
    ) {
        let program = rules.program
        ev.begin()
        swap(&ev.user, &st)
        defer { swap(&ev.user, &st); ev.sample = nil }
        ev.sample = s
        // By index: `for rule in program.alerts` would copy each rule (a retain per field).
        for j in program.alerts.indices where program.alerts[j].trigger == .sample(s.metric) {
            ev.alert = j
            if !ev.passesFilter(j, day) { continue }
            step(
                program.alerts[j], program: program, at: s.end.milliseconds, activeSince: s.end.milliseconds, clock: .wall, ev: &ev,
                day: day, into: &out)
        }
    }

    /// One evaluation of an alert (`ev.alert` set): its monitoring window, its condition unless
    /// inhibited or outside the window, its state machine, and the transition that produces, if any.
    /// `clock`: `.days` (the user's calendar) for daily rules, so that their durations count local days.
    static func step(
        _ rule: AlertRule, program: Program, at: Int64, activeSince: Int64, clock: AlertStateMachine.Clock,
        ev: inout Evaluator, day: DayNumber, into out: inout [EngineOutput]
    ) {
        let j = ev.alert
        let inhibited = rule.inhibitedBy.contains { ev.user.alertStates[$0].isFiring }
        var sm = ev.user.alertStates[j]
        let use = sm.conditionUse(at: at)
        // The window first: outside it the condition is not read (a firing alert expires).
        let monitored = use == .none || ev.monitored(j, day)
        // Only as much of the condition as the state machine reads (false stands for "not true").
        let cond: Bool?
        switch inhibited || !monitored ? .none : use {
        case .none: cond = nil
        case .truth: cond = ev.conditionHolds(j, day)
        case .value: cond = ev.condition(j, day)
        }
        let wasFiring = sm.isFiring
        let action = sm.evaluate(
            cond, monitored: monitored, at: at, activeSince: activeSince, forMs: rule.forSeconds * 1000,
            keepFiringForMs: rule.keepFiringForSeconds * 1000, repeatMs: rule.repeatSeconds * 1000,
            cooldownMs: rule.cooldownSeconds * 1000, clock: clock)
        ev.user.alertStates[j] = sm
        if sm.isFiring != wasFiring { ev.firing[j] += sm.isFiring ? 1 : -1 }
        if let t = transition(action, rule: rule, ev: &ev, day: day, daily: clock.isDays) { out.append(.alert(t)) }
    }

    /// The transition an action publishes, its texts rendered on `day`. `daily`: the rule is
    /// evaluated at day closes (its instants are local midnights ending the evaluated day).
    static func transition(_ action: AlertStateMachine.Action, rule: AlertRule, ev: inout Evaluator, day: DayNumber, daily: Bool) -> AlertTransition? {
        let status: AlertStatus, since: Int64, fired: Int64, ended: Int64?, isRepeat: Bool
        switch action {
        case .none: return nil
        case .fire(let s, let f): (status, since, fired, ended, isRepeat) = (.firing, s, f, nil, false)
        case .repeatFiring(let s, let f): (status, since, fired, ended, isRepeat) = (.firing, s, f, nil, true)
        case .resolve(let s, let f, let r): (status, since, fired, ended, isRepeat) = (.resolved, s, f, r, false)
        case .expire(let s, let f, let e): (status, since, fired, ended, isRepeat) = (.expired, s, f, e, false)
        }
        var evidence: [Evidence] = []
        for (i, b) in rule.lets.enumerated() {
            if b.type == .string {
                evidence.append(Evidence(name: b.name, text: ev.localString(ev.letSlot(i), day)))
            } else if b.type == .bool {
                evidence.append(Evidence(name: b.name, value: ev.localBoolean(ev.letSlot(i), day).map { $0 ? 1 : 0 }, unit: "bool"))
            } else {
                evidence.append(Evidence(name: b.name, value: ev.local(ev.letSlot(i), day).map { b.displayUnit.fromSI($0) }, unit: b.displayUnit.symbol))
            }
        }
        let user = ev.user.user
        let notes = ev.user.annotations(from: day - 13, to: day).map { e in
            e.firstDay == e.lastDay
                ? "\(e.kind) \(CivilDate(dayNumber: e.firstDay))"
                : "\(e.kind) \(CivilDate(dayNumber: e.firstDay))..\(CivilDate(dayNumber: e.lastDay))"
        }
        let date = CivilDate(dayNumber: day)
        let days = Engine.localDays(since: since, fired: fired, daily: daily, calendar: ev.user.calendar)
        let kind: TransitionKind = status == .resolved ? .resolved : status == .expired ? .expired : isRepeat ? .repeat : .firing
        let headline = TemplateText.oneLine(
            Engine.render(rule.headline(for: kind).parts, slot: CompiledRules.headlineSlot(kind), rule: rule, ev: &ev, day: day, days: days))
        let details = Engine.render(rule.details.parts, slot: 0, rule: rule, ev: &ev, day: day, days: days)
        let sinceTs = Timestamp(milliseconds: since)
        var transition = AlertTransition(
            id: AlertTransition.stableID(rule: rule.name, user: user, activeSince: sinceTs), rule: rule.name, user: user,
            severity: rule.severity, status: status, activeSince: sinceTs, firedAt: Timestamp(milliseconds: fired),
            resolvedAt: status == .resolved ? ended.map { Timestamp(milliseconds: $0) } : nil, day: date, headline: headline, details: details,
            labels: rule.labels, evidence: evidence, annotations: notes, isRepeat: isRepeat,
            reason: status == .expired ? AlertTransition.windowEnded : nil, activeSinceDay: days.since, firedDay: days.fired,
            endedDay: status == .firing ? nil : date)
        if status == .expired { transition.expiredAt = ended.map { Timestamp(milliseconds: $0) } }
        (transition.window, transition.baselineWindow) = ev.decisionWindows(ev.alert, day)
        return transition
    }

    /// Formats a number with a fixed number of decimals (default 2), as templates write it.
    package static func format(_ v: Double, decimals: Int?) -> String { TemplateText.number(v, decimals: decimals) }

    // MARK: Retention

    /// The days still needed by some rule for a user (see ``DayCloser/retainedRanges(_:)``).
    package func retainedRanges(_ st: UserState) -> [ClosedRange<DayNumber>] { closer.retainedRanges(st) }

    // MARK: Reload

    /// Swaps the rules, keeping the alert state of rules that kept their name (Prometheus's CopyState).
    /// Folded history follows its inputs by identity: an input the new rules share keeps its
    /// values, a new input has none for folded days (like a new Prometheus recording rule, it is
    /// not back-filled past the allowed lateness).
    ///
    /// A firing instance of a rule the new rules no longer have expires (`expiredAt` = `now`,
    /// `"reason": "rule_removed"`), so that its retained alert is cleared rather than left firing;
    /// it is not resolved, since nothing showed that its condition stopped holding.
    package mutating func reload(_ newProgram: Program, now: Timestamp, into out: inout [EngineOutput]) {
        let removed = program.alerts.filter { a in !newProgram.alerts.contains { $0.name == a.name } }
        closer = DayCloser(program: newProgram, configuration: configuration)
        evaluator = Evaluator(rules: closer)
        sampleMask = Engine.sampleMask(newProgram)
        for k in states.indices {
            if !removed.isEmpty { Engine.resolveRemoved(removed, in: states[k], now: now, into: &out) }
            states[k].clearCaches()
            states[k].alignAlerts(to: closer.alertNames)
            states[k].remapFolded(to: newProgram.inputs)
            states[k].startAlertLog()
        }
        evaluator.firing = countFiring()
    }

    /// The expired transitions of a user's firing instances of removed rules.
    private static func resolveRemoved(_ removed: [AlertRule], in st: UserState, now: Timestamp, into out: inout [EngineOutput]) {
        for rule in removed {
            guard let i = st.alertNames.firstIndex(of: rule.name),
                case .firing(let since, let fired, _, _) = st.alertStates[i].state
            else { continue }
            let sinceTs = Timestamp(milliseconds: since), at = Timestamp(milliseconds: max(now.milliseconds, fired))
            let days = Engine.localDays(since: since, fired: fired, daily: rule.trigger == .day, calendar: st.calendar)
            var t = AlertTransition(
                id: AlertTransition.stableID(rule: rule.name, user: st.user, activeSince: sinceTs), rule: rule.name, user: st.user,
                severity: rule.severity, status: .expired, activeSince: sinceTs, firedAt: Timestamp(milliseconds: fired), resolvedAt: nil,
                day: CivilDate(dayNumber: st.calendar.day(of: at)),
                headline: TemplateText.oneLine("\(TemplateText.ruleWords(rule.name)) (active since \(days.since)) ended: its rule was removed"),
                labels: rule.labels, evidence: [], annotations: [], reason: AlertTransition.ruleRemoved, activeSinceDay: days.since,
                firedDay: days.fired)
            t.expiredAt = at
            out.append(.alert(t))
        }
    }

    /// What the state store must write of a user: the head, the open days changed since the last
    /// ``markPersisted(_:)`` and the days folded since (see ``UserSnapshot``); nil for an unknown user.
    package func changes(of user: String) -> UserSnapshot? { slots[user].map { states[$0].snapshot(changesOnly: true) } }

    /// A user's whole state as a snapshot (every open day); nil for an unknown user.
    package func snapshot(of user: String) -> UserSnapshot? { slots[user].map { states[$0].snapshot(changesOnly: false) } }

    /// Records that the state store has written a user's ``changes(of:)``.
    package mutating func markPersisted(_ user: String) {
        guard let k = slot(user, create: false) else { return }
        states[k].markPersisted()
    }

    /// Makes room for `n` more users (before restoring them), so that the users table and its
    /// index grow once instead of doubling their way there.
    package mutating func reserveUsers(_ n: Int) {
        states.reserveCapacity(states.count + n)
        slots.reserveCapacity(slots.count + n)
        unordered.reserveCapacity(unordered.count + n)
    }

    /// Restores a user from a snapshot (from the state store), replacing any state it has: its
    /// alert states aligned with the rules by name (a rule that kept its name keeps its state, a
    /// removed rule's goes), its folded values expressed for the rules' daily inputs.
    /// The id filter is built by the user's first new sample (`noteID` finds it empty), so a
    /// restart does not hash the open values of users who send nothing.
    package mutating func restore(_ snapshot: consuming UserSnapshot) {
        restore(PreparedUser(state: UserState(restoring: snapshot, alertNames: closer.alertNames, inputs: program.inputs)))
    }

    /// Makes users' states from snapshots for these rules, on any thread (the state store's load
    /// threads): `restore(_:)` of what it makes then only inserts them.
    package var preparer: @Sendable (UserSnapshot) -> PreparedUser {
        let names = closer.alertNames, inputs = program.inputs
        return { PreparedUser(state: UserState(restoring: $0, alertNames: names, inputs: inputs)) }
    }

    /// Restores a user made by ``preparer`` of an engine with these rules; one made for other rules
    /// is re-aligned here, as a reload from those rules would (folded values of inputs they lack are gone).
    package mutating func restore(_ prepared: consuming PreparedUser) {
        var s = prepared.state
        if s.alertNames != closer.alertNames || s.foldedInputs != program.inputs {  // same arrays: no element compared
            s.alignAlerts(to: closer.alertNames)
            s.remapFolded(to: program.inputs)
        }
        for j in s.alertStates.indices where s.alertStates[j].isFiring { evaluator.firing[j] += 1 }
        if let k = slots[s.user] {
            for j in states[k].alertStates.indices where states[k].alertStates[j].isFiring { evaluator.firing[j] -= 1 }
            states[k] = s
        } else {
            _ = insert(s)
        }
    }
}

/// A user's state made from a ``UserSnapshot`` by ``Engine/preparer``, for the engine's `restore(_:)`.
package struct PreparedUser: Sendable {
    var state: UserState
}
