import MobilityModel
import RuleLanguage

extension Engine {
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
