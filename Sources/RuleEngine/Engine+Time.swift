import MobilityModel
import RuleLanguage

extension Engine {
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
}
