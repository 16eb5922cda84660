import MobilityModel
import RuleLanguage

/// Revision: evaluating a user's alerts again over closed days whose data or timeline changed.
extension DayCloser {
    /// Rolls the user's daily alert states back to before `requested` (at most
    /// ``EngineConfiguration/revisionDays`` before `closed`, and not before the alert log's
    /// start) and evaluates the days from there through `closed` again, as if the late entry or
    /// sample had been there when they closed. What the care team was told is then corrected,
    /// episode by episode (an episode: one rule's firing from one `activeSince`):
    ///
    /// * an episode of both evaluations that ends the same way publishes nothing;
    /// * an episode the re-evaluation does not have is withdrawn: a resolved transition with
    ///   `"reason": "revised"` (also when it had already resolved: a false alarm is marked so);
    /// * an episode only the re-evaluation has publishes its transitions of the re-evaluated
    ///   days (its firing, and its resolution if it ended);
    /// * an episode of both that now ends within the days publishes its resolution, and one that
    ///   had ended but now goes on fires again (same id);
    /// * the episode firing at the end is published again, last, when another episode's
    ///   transitions were (they replaced what the rule's retained alert topic held).
    func reevaluate(_ ev: inout Evaluator, from requested: DayNumber, through closed: DayNumber, into out: inout [EngineOutput]) {
        guard configuration.revisionDays > 0 else { return }
        let window = closed - DayNumber(configuration.revisionDays) + 1
        let from = max(requested, window, ev.user.alertLogStart)
        guard from <= closed else { return }
        let published = ev.user.alertStates
        var rolled = published
        // Newest first, so that the earliest change on or after `from` is the one that stays.
        for e in ev.user.alertLog.reversed() where e.day >= from { rolled[Int(e.rule)] = e.before }
        let before = DayCloser.episodes(ev.user.alertLog, from: from, final: published)
        ev.user.alertLog.removeAll { $0.day >= from && revisable[Int($0.rule)] }
        let rewind = ev.user.calendar.startOfDay(from).milliseconds
        for j in program.alerts.indices where revisable[j] {
            let r = rolled[j].rewound(to: rewind)
            if r.isFiring != published[j].isFiring { ev.firing[j] += r.isFiring ? 1 : -1 }
            ev.user.alertStates[j] = r
        }
        var fresh: [AlertTransition] = []
        do {
            var outputs: [EngineOutput] = []
            for d in from...closed {
                ev.resetMemo(day: d)
                evaluateAlerts(&ev, d, revisableOnly: true, into: &outputs)
            }
            for case .alert(let t) in outputs { fresh.append(t) }
        }
        let after = DayCloser.episodes(ev.user.alertLog, from: from, final: ev.user.alertStates)
        let end = ev.user.calendar.startOfDay(closed + 1).milliseconds
        for j in program.alerts.indices where revisable[j] {
            let rule = program.alerts[j]
            ev.alert = j
            let emitted = out.count
            let old = before[j] ?? [:], new = after[j] ?? [:]
            for (since, fired) in old.sorted(by: { $0.key < $1.key }) where new[since] == nil {
                let action = AlertStateMachine.Action.resolve(activeSince: since, firedAt: fired, resolvedAt: end)
                if var t = Engine.transition(action, rule: rule, ev: &ev, day: closed, daily: true) {
                    t.reason = AlertTransition.revised
                    t.headline = AlertTransition.withdrawnHeadline
                    out.append(.alert(t))
                }
            }
            let wasFiring = published[j].firingEpisode?.since, isFiring = ev.user.alertStates[j].firingEpisode?.since
            for (since, fired) in new.sorted(by: { $0.key < $1.key }) {
                let episode = fresh.filter { $0.rule == rule.name && $0.activeSince.milliseconds == since && !$0.isRepeat }
                if old[since] == nil {
                    for t in episode { out.append(.alert(t)) }
                } else if wasFiring == since && isFiring != since {
                    for t in episode where t.status != .firing { out.append(.alert(t)) }
                } else if wasFiring != since && isFiring == since,
                    let t = Engine.transition(.fire(activeSince: since, firedAt: fired), rule: rule, ev: &ev, day: closed, daily: true)
                {
                    out.append(.alert(t))
                }
            }
            // A rule has one retained alert topic: a transition of another episode published here
            // (a withdrawal's clear, an ended episode's firing and end) replaced what it held, so
            // the episode firing now is published again, last.
            if let current = ev.user.alertStates[j].firingEpisode,
                out[emitted...].contains(where: { if case .alert(let t) = $0 { t.activeSince.milliseconds != current.since } else { false } }),
                case .alert(let last)? = out.last, !(last.activeSince.milliseconds == current.since && last.status == .firing),
                let t = Engine.transition(.fire(activeSince: current.since, firedAt: current.fired), rule: rule, ev: &ev, day: closed, daily: true)
            {
                out.append(.alert(t))
            }
        }
    }

    /// Each daily rule's firing episodes (`activeSince` → `firedAt`) over the days of the alert
    /// log from `from` on: the firing states the log holds from then, and the final state.
    static func episodes(_ log: [AlertLogEntry], from: DayNumber, final: [AlertStateMachine]) -> [Int: [Int64: Int64]] {
        var found: [Int: [Int64: Int64]] = [:]
        for e in log where e.day >= from {
            if let ep = e.before.firingEpisode { found[Int(e.rule), default: [:]][ep.since] = ep.fired }
        }
        for (j, sm) in final.enumerated() {
            if let ep = sm.firingEpisode { found[j, default: [:]][ep.since] = ep.fired }
        }
        return found
    }
}
