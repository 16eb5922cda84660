import MobilityModel
import RuleLanguage

/// Tunables of the engine.
public struct EngineConfiguration: Sendable {
    /// A day is evaluated once `now` passes the next local midnight plus this grace (seconds).
    public var graceSeconds: Int64 = 3600
    /// Samples older than this (relative to now) are rejected as too late (seconds).
    public var allowedLatenessSeconds: Int64 = 7 * 86_400
    /// Samples ending more than this after now are rejected as in the future (clock-skew guard).
    public var maxFutureSeconds: Int64 = 600
    /// The calendar of users without a profile.
    public var defaultCalendar: LocalCalendar = .utc
    /// Whether recording rules produce series outputs.
    public var publishSeries = true
    /// Compact history no rule can reach any more (see ``Engine/compact(_:)``). Off only to test that compaction changes nothing.
    public var retention = true

    /// The defaults.
    public init() {}
}

/// Something the engine asks the outside world to publish.
public enum EngineOutput: Hashable, Sendable {
    case alert(AlertTransition)
    case series(SeriesPoint)
    case rejected(user: String?, topic: String, Rejection)
}

/// What happened to an ingested sample.
public enum IngestOutcome: Hashable, Sendable {
    case accepted
    /// Already seen (same id): harmless re-delivery.
    case duplicate
    /// Replaced an older version with the same sync identifier.
    case superseded
    /// An older sync version than the one stored: ignored.
    case stale
    case rejected(Rejection)
}

/// The rule engine: per-user state, day buckets, windows, rules and alert state machines.
///
/// Pure: no I/O, no clock. Every call takes `now` (event or wall time) and appends what must be
/// published to `out`. One engine is owned by one shard.
public struct Engine: Sendable {
    /// The checked rules.
    public private(set) var program: Program
    /// Tunables.
    public var configuration: EngineConfiguration
    /// Users by id.
    public private(set) var users: [String: UserState] = [:]
    /// Users whose state changed since the last ``takeTouched()`` (for the state store).
    public private(set) var touched: Set<String> = []

    /// Returns and clears the set of users whose state changed.
    public mutating func takeTouched() -> Set<String> {
        defer { touched.removeAll(keepingCapacity: true) }
        return touched
    }

    /// Creates an engine.
    public init(program: Program, configuration: EngineConfiguration = EngineConfiguration()) {
        self.program = program
        self.configuration = configuration
    }

    private mutating func withUser<R>(_ id: String, _ body: (inout UserState) -> R) -> R {
        var st = users.removeValue(forKey: id) ?? UserState(user: id, calendar: configuration.defaultCalendar)
        let r = body(&st)
        users[id] = st
        touched.insert(id)
        return r
    }

    // MARK: Inputs

    /// Sets a user's home time zone (from the retained profile).
    public mutating func setProfile(user: String, calendar: LocalCalendar) {
        withUser(user) { st in
            st.calendar = calendar
            st.hasProfile = true
            st.aggregates.removeAll()
        }
    }

    /// Ingests one validated sample. Per-sample rules run at once; daily rules wait for the day to close.
    @discardableResult
    public mutating func ingest(_ s: Sample, user: String, now: Timestamp, into out: inout [EngineOutput]) -> IngestOutcome {
        if s.end.milliseconds > now.milliseconds + configuration.maxFutureSeconds * 1000 {
            return .rejected(Rejection(.inFuture, "sample ends at \(s.end), more than \(configuration.maxFutureSeconds) s after now (\(now))", itemID: s.id))
        }
        if s.end.milliseconds < now.milliseconds - configuration.allowedLatenessSeconds * 1000 {
            return .rejected(Rejection(.tooLate, "sample ends at \(s.end), more than \(configuration.allowedLatenessSeconds / 86_400) d before now (\(now))", itemID: s.id))
        }
        let program = self.program
        let publishSeries = configuration.publishSeries
        return withUser(user) { st in
            if st.sampleIndex[s.id] != nil { return .duplicate }
            var outcome = IngestOutcome.accepted
            if let sync = s.syncIdentifier {
                let version = s.syncVersion ?? 0
                if let prev = st.syncIndex[sync] {
                    if version <= prev.version { return .stale }
                    Engine.remove(id: prev.id, from: &st, inputs: program.inputs.count)
                    outcome = .superseded
                }
                st.syncIndex[sync] = (version, s.id)
            }
            let day = s.localDay(default: st.calendar)
            let key = UserState.BucketKey(metric: s.metric, day: day)
            st.buckets[key, default: []].append(StoredValue(id: s.id, value: s.value, end: s.end, provenance: s.provenance))
            st.sampleIndex[s.id] = key
            st.noteDay(day)
            st.invalidate(day: day, inputs: program.inputs.count)
            if publishSeries, let closed = st.lastClosedDay, day <= closed { st.revisedDays.insert(day) }
            Engine.runSampleRules(program, s, day: day, state: &st, into: &out)
            return outcome
        }
    }

    static func remove(id: String, from st: inout UserState, inputs: Int) {
        guard let key = st.sampleIndex.removeValue(forKey: id) else { return }
        st.buckets[key]?.removeAll { $0.id == id }
        if st.buckets[key]?.isEmpty == true { st.buckets[key] = nil }
        st.invalidate(day: key.day, inputs: inputs)
        if let closed = st.lastClosedDay, key.day <= closed { st.revisedDays.insert(key.day) }
    }

    /// Retracts samples by id (HealthKit deletions). Unknown ids are ignored. Returns how many were removed.
    @discardableResult
    public mutating func delete(ids: [String], user: String) -> Int {
        guard users[user] != nil else { return 0 }
        let inputs = program.inputs.count
        return withUser(user) { st in
            var n = 0
            for id in ids where st.sampleIndex[id] != nil {
                Engine.remove(id: id, from: &st, inputs: inputs)
                n += 1
            }
            return n
        }
    }

    /// Records a clinical event or annotation (replacing one with the same id).
    public mutating func record(event e: TimelineEvent, user: String) {
        withUser(user) { st in
            st.events[e.id] = e
            st.noteDay(e.firstDay)
            st.rebuildBoundaries()
            if let closed = st.lastClosedDay, e.firstDay <= closed, e.category == .clinical {
                for d in e.firstDay...closed { st.revisedDays.insert(d) }
            }
        }
    }

    // MARK: Time

    /// Closes every user's days that ended before `now - grace`, evaluating daily rules in day order.
    public mutating func advance(to now: Timestamp, into out: inout [EngineOutput]) {
        for id in Array(users.keys).sorted() { advance(user: id, to: now, into: &out) }
    }

    /// Closes one user's finished days.
    public mutating func advance(user id: String, to now: Timestamp, into out: inout [EngineOutput]) {
        guard var st = users.removeValue(forKey: id) else { return }
        defer { users[id] = st }
        guard let first = st.firstDay else { return }
        let lastClosable = st.calendar.day(of: now.adding(seconds: -configuration.graceSeconds)) - 1
        var ev = Evaluator(program: program, user: st)
        // Revised days (late data): publish corrected series values.
        if configuration.publishSeries, !st.revisedDays.isEmpty, let closed = st.lastClosedDay {
            let from = st.revisedDays.min()!
            for d in max(from, first)...closed { emitSeries(&ev, d, revised: true, into: &out) }
            ev.user.revisedDays.removeAll()
        }
        var start = (st.lastClosedDay.map { $0 + 1 }) ?? first
        start = max(start, lastClosable - 3650)
        let revised = !st.revisedDays.isEmpty
        if start <= lastClosable {
            for d in start...lastClosable { closeDay(&ev, d, into: &out) }
            ev.user.lastClosedDay = lastClosable
        }
        if revised || start <= lastClosable { touched.insert(id) }
        st = ev.user
        if configuration.retention, start <= lastClosable { compact(&st) }
    }

    private func emitSeries(_ ev: inout Evaluator, _ d: DayNumber, revised: Bool, into out: inout [EngineOutput]) {
        let date = CivilDate(dayNumber: d)
        for (i, s) in program.series.enumerated() {
            let v = ev.number(.series(i), d)
            out.append(.series(SeriesPoint(user: ev.user.user, name: s.name, day: date, value: v.map { s.displayUnit.fromSI($0) },
                                           unit: s.displayUnit.symbol, revised: revised)))
        }
    }

    private func closeDay(_ ev: inout Evaluator, _ d: DayNumber, into out: inout [EngineOutput]) {
        ev.resetMemo()
        if configuration.publishSeries { emitSeries(&ev, d, revised: false, into: &out) }
        let dayStart = ev.user.calendar.startOfDay(d).milliseconds
        let dayEnd = ev.user.calendar.startOfDay(d + 1).milliseconds
        for (j, rule) in program.alerts.enumerated() where rule.trigger == .day {
            ev.alert = j
            let inhibited = rule.inhibitedBy.contains { ev.user.alerts[program.alerts[$0].name]?.isFiring == true }
            let cond = inhibited ? nil : ev.boolean(rule.condition, d)
            var sm = ev.user.alerts[rule.name] ?? AlertStateMachine()
            let action = sm.evaluate(cond, at: dayEnd, activeSince: dayStart, forMs: rule.forSeconds * 1000,
                                     keepFiringForMs: rule.keepFiringForSeconds * 1000, repeatMs: rule.repeatSeconds * 1000,
                                     cooldownMs: rule.cooldownSeconds * 1000)
            ev.user.alerts[rule.name] = sm
            if let t = Engine.transition(action, rule: rule, ev: &ev, day: d) { out.append(.alert(t)) }
        }
    }

    static func runSampleRules(_ program: Program, _ s: Sample, day: DayNumber, state st: inout UserState, into out: inout [EngineOutput]) {
        var ev: Evaluator?
        for (j, rule) in program.alerts.enumerated() where rule.trigger == .sample(s.metric) {
            if ev == nil { ev = Evaluator(program: program, user: st); ev!.sample = s }
            ev!.alert = j
            if let f = rule.filter, ev!.boolean(f, day) != true { continue }
            let inhibited = rule.inhibitedBy.contains { ev!.user.alerts[program.alerts[$0].name]?.isFiring == true }
            let cond = inhibited ? nil : ev!.boolean(rule.condition, day)
            var sm = ev!.user.alerts[rule.name] ?? AlertStateMachine()
            let at = s.end.milliseconds
            let action = sm.evaluate(cond, at: at, activeSince: at, forMs: rule.forSeconds * 1000,
                                     keepFiringForMs: rule.keepFiringForSeconds * 1000, repeatMs: rule.repeatSeconds * 1000,
                                     cooldownMs: rule.cooldownSeconds * 1000)
            ev!.user.alerts[rule.name] = sm
            if let t = transition(action, rule: rule, ev: &ev!, day: day) { out.append(.alert(t)) }
        }
        if let ev { st.alerts = ev.user.alerts }
    }

    static func transition(_ action: AlertStateMachine.Action, rule: AlertRule, ev: inout Evaluator, day: DayNumber) -> AlertTransition? {
        let status: AlertStatus, since: Int64, fired: Int64, resolved: Int64?, isRepeat: Bool
        switch action {
        case .none: return nil
        case .fire(let s, let f): (status, since, fired, resolved, isRepeat) = (.firing, s, f, nil, false)
        case .repeatFiring(let s, let f): (status, since, fired, resolved, isRepeat) = (.firing, s, f, nil, true)
        case .resolve(let s, let f, let r): (status, since, fired, resolved, isRepeat) = (.resolved, s, f, r, false)
        }
        var evidence: [Evidence] = []
        for (i, b) in rule.lets.enumerated() {
            if b.type == .bool {
                evidence.append(Evidence(name: b.name, value: ev.boolean(.local(i), day).map { $0 ? 1 : 0 }, unit: "bool"))
            } else {
                evidence.append(Evidence(name: b.name, value: ev.number(.local(i), day).map { b.displayUnit.fromSI($0) }, unit: b.displayUnit.symbol))
            }
        }
        let user = ev.user.user
        let notes = ev.user.annotations(from: day - 13, to: day).map { e in
            e.firstDay == e.lastDay ? "\(e.kind) \(CivilDate(dayNumber: e.firstDay))"
                : "\(e.kind) \(CivilDate(dayNumber: e.firstDay))..\(CivilDate(dayNumber: e.lastDay))"
        }
        let date = CivilDate(dayNumber: day)
        var summary = ""
        for p in rule.summary {
            switch p {
            case .text(let t): summary += t
            case .user: summary += user
            case .day: summary += date.description
            case .rule: summary += rule.name
            case .value(let e, let unit, let decimals, let isBool):
                if isBool {
                    summary += ev.boolean(e, day).map { $0 ? "yes" : "no" } ?? "unknown"
                } else if let v = ev.number(e, day) {
                    summary += Engine.format(unit.fromSI(v), decimals: decimals) + (unit.symbol.isEmpty ? "" : " " + unit.symbol)
                } else {
                    summary += "unknown"
                }
            }
        }
        let sinceTs = Timestamp(milliseconds: since)
        return AlertTransition(id: AlertTransition.stableID(rule: rule.name, user: user, activeSince: sinceTs), rule: rule.name, user: user,
                               severity: rule.severity, status: status, activeSince: sinceTs, firedAt: Timestamp(milliseconds: fired),
                               resolvedAt: resolved.map { Timestamp(milliseconds: $0) }, day: date, summary: summary,
                               labels: rule.labels, evidence: evidence, annotations: notes, isRepeat: isRepeat)
    }

    /// Formats a number with a fixed number of decimals (or up to 3 significant decimals).
    public static func format(_ v: Double, decimals: Int?) -> String {
        let d = decimals ?? 2
        var p = 1.0
        for _ in 0..<d { p *= 10 }
        let r = (v * p).rounded() / p
        var s = r == 0 ? "0" : String(r)
        if s.hasSuffix(".0") { s.removeLast(2) }
        if d > 0 {
            if !s.contains(".") { s += "." }
            let frac = s.count - 1 - s.distance(from: s.startIndex, to: s.firstIndex(of: ".")!)
            if frac < d { s += String(repeating: "0", count: d - frac) }
        }
        if d == 0, s.hasSuffix(".") { s.removeLast() }
        return s
    }

    // MARK: Retention

    /// The days still needed by some rule for a user: the rules' look-back plus the allowed
    /// lateness before the last closed day, and the anchored windows (baselines, recovery
    /// windows) around the latest clinical event of each kind.
    public func retainedRanges(_ st: UserState) -> [ClosedRange<DayNumber>] {
        guard let closed = st.lastClosedDay else { return [] }
        let recent = closed - DayNumber(program.lookbackDays) - DayNumber(configuration.allowedLatenessSeconds / 86_400) - 2
        var ranges = [recent...DayNumber.max]
        if program.anchoredWindowDays > 0 {
            var latestByKind: [String: DayNumber] = [:]
            for e in st.events.values where e.category == .clinical { latestByKind[e.kind] = max(latestByKind[e.kind] ?? e.firstDay, e.firstDay) }
            let a = DayNumber(program.anchoredWindowDays)
            for d in latestByKind.values { ranges.append((d - a - 1)...(d + a)) }
        }
        return ranges
    }

    /// Drops day buckets (and their sample and sync ids) that no retained range covers: a late
    /// sample for such a day would be rejected as too late anyway, and no window reaches it.
    func compact(_ st: inout UserState) {
        let ranges = retainedRanges(st)
        guard !ranges.isEmpty else { return }
        let old = st.buckets.keys.filter { k in !ranges.contains { $0.contains(k.day) } }
        guard !old.isEmpty else { return }
        var dropped = Set<String>()
        for k in old { for v in st.buckets.removeValue(forKey: k) ?? [] { dropped.insert(v.id); st.sampleIndex[v.id] = nil } }
        st.syncIndex = st.syncIndex.filter { !dropped.contains($0.value.id) }
        st.aggregates.removeAll()
    }

    // MARK: Reload

    /// Swaps the rules, keeping the alert state of rules that kept their name (Prometheus's CopyState).
    public mutating func reload(_ newProgram: Program) {
        let names = Set(newProgram.alerts.map(\.name))
        program = newProgram
        for id in Array(users.keys) {
            users[id]!.aggregates.removeAll()
            users[id]!.alerts = users[id]!.alerts.filter { names.contains($0.key) }
        }
    }

    /// Restores a user's state (from the state store).
    public mutating func restore(_ st: UserState) {
        var s = st
        s.aggregates.removeAll()
        users[st.user] = s
    }
}
