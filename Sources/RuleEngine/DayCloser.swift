import MobilityModel
import RuleLanguage

/// Closing days, folding and compaction: the part of the engine that reads only the rules and
/// the configuration, so that it can work on a user's state in place inside the users table.
final class DayCloser: Sendable {
    let program: Program
    /// The program's expressions as nodes, for the evaluator.
    let code: CompiledRules
    let configuration: EngineConfiguration
    /// The alert names in rule order, shared by every user's state.
    let alertNames: [String]
    /// The daily rules a revision re-evaluates (by rule index): those not inhibited, directly or
    /// through other rules, by a per-sample rule, whose state of a past day the log does not hold.
    let revisable: [Bool]

    init(program: Program, configuration: EngineConfiguration) {
        self.program = program
        self.code = CompiledRules(program)
        self.configuration = configuration
        alertNames = program.alerts.map(\.name)
        revisable = DayCloser.revisable(program.alerts)
    }

    /// Which rules a revision can re-evaluate: daily rules whose inhibitors all are (a fixpoint
    /// over the inhibition graph, which the checker keeps acyclic).
    static func revisable(_ alerts: [AlertRule]) -> [Bool] {
        var ok = alerts.map { $0.trigger == .day }
        var changed = true
        while changed {
            changed = false
            for j in alerts.indices where ok[j] && alerts[j].inhibitedBy.contains(where: { !ok[$0] }) {
                ok[j] = false
                changed = true
            }
        }
        return ok
    }

    /// Closes a user's finished days in place; returns whether the state changed.
    func advance(_ st: inout UserState, to now: Timestamp, ev: inout Evaluator, into out: inout [EngineOutput]) -> Bool {
        guard let first = st.firstDay else {
            // A user with nothing but deletions still forgets them (no day closes for it).
            return !st.tombstones.isEmpty && pruneTombstones(&st, now: now)
        }
        // The common case, after every sample: nothing to close before a known instant.
        if now.milliseconds < st.closeCheckUntil && st.revisedDays.isEmpty { return false }
        let graced = now.adding(seconds: -configuration.graceSeconds)
        let current = st.calendar.day(of: graced)
        let lastClosable = current - 1
        let closed = st.lastClosedDay ?? (first - 1)
        if lastClosable <= closed && st.revisedDays.isEmpty {
            // Nothing closes until the graced clock reaches the next local midnight (while no day
            // has closed, an earlier first day could change that: no shortcut then).
            if st.lastClosedDay != nil { st.closeCheckUntil = st.calendar.startOfDay(current + 1).milliseconds + configuration.graceSeconds * 1000 }
            return false
        }
        ev.begin()
        swap(&ev.user, &st)
        defer { swap(&ev.user, &st) }
        // Revised days (late data, timeline entries): publish corrected series values, then
        // evaluate the alerts again from the first of them.
        if !ev.user.revisedDays.isEmpty {
            // A clinical change dated before the revision window leaves the alerts as published:
            // the states at the window's start were evaluated under other segments (a false alarm
            // the event explains would be held firing by the unknown values the new boundary makes).
            let marked = ev.user.revisedDays.remove(UserState.segmentsChangedBeforeRevision) != nil
            if let closed = ev.user.lastClosedDay, let earliest = ev.user.revisedDays.min() {
                let from = max(earliest, first)
                if configuration.publishSeries, from <= closed { for d in from...closed { emitSeries(&ev, d, revised: true, into: &out) } }
                if !marked { reevaluate(&ev, from: from, through: closed, into: &out) }
            }
            ev.user.revisedDays.removeAll()
        }
        let start = max(closed + 1, lastClosable - 3650)
        if start <= lastClosable {
            if configuration.revisionDays > 0 && ev.user.alertLogStart == .min { ev.user.alertLogStart = start }
            for d in start...lastClosable { closeDay(&ev, d, into: &out) }
            ev.user.lastClosedDay = lastClosable
            pruneAlertLog(&ev.user)
            if !ev.user.tombstones.isEmpty { _ = pruneTombstones(&ev.user, now: now) }
            if configuration.retention {
                fold(&ev, now: now)
                compact(&ev.user)
            }
        }
        return true
    }

    /// Forgets the deletions no sample can still be accepted for: a deletion is remembered
    /// while a sample of its day could be (the fold limit: the allowed lateness plus two days of
    /// margin). Returns whether anything changed.
    func pruneTombstones(_ st: inout UserState, now: Timestamp) -> Bool {
        let limit = st.calendar.day(of: now.adding(seconds: -configuration.allowedLatenessSeconds)) - 2
        return st.pruneTombstones(through: limit, today: st.calendar.day(of: now))
    }

    func emitSeries(_ ev: inout Evaluator, _ d: DayNumber, revised: Bool, into out: inout [EngineOutput]) {
        let date = CivilDate(dayNumber: d)
        for (i, s) in program.series.enumerated() {
            let v = ev.series(i, d)
            out.append(
                .series(
                    SeriesPoint(
                        user: ev.user.user, name: s.name, day: date, value: v.map { s.displayUnit.fromSI($0) },
                        unit: s.displayUnit.symbol, revised: revised)))
        }
    }

    func closeDay(_ ev: inout Evaluator, _ d: DayNumber, into out: inout [EngineOutput]) {
        ev.resetMemo(day: d)
        if configuration.publishSeries { emitSeries(&ev, d, revised: false, into: &out) }
        evaluateAlerts(&ev, d, into: &out)
    }

    /// Evaluates the daily alert rules on a day (memo reset for it), noting in the alert log each
    /// rule whose lifecycle the day changed; with `revisableOnly`, only the rules a revision
    /// re-evaluates.
    func evaluateAlerts(_ ev: inout Evaluator, _ d: DayNumber, revisableOnly: Bool = false, into out: inout [EngineOutput]) {
        let dayStart = ev.user.calendar.startOfDay(d).milliseconds
        let dayEnd = ev.user.calendar.startOfDay(d + 1).milliseconds
        let logs = configuration.revisionDays > 0
        for j in program.alerts.indices where program.alerts[j].trigger == .day && (!revisableOnly || revisable[j]) {
            ev.alert = j
            let before = ev.user.alertStates[j]
            Engine.step(
                program.alerts[j], program: program, at: dayEnd, activeSince: dayStart, clock: .days(ev.user.calendar), ev: &ev,
                day: d, into: &out)
            if logs && !before.sameLifecycle(as: ev.user.alertStates[j]) {
                ev.user.alertLog.append(AlertLogEntry(day: d, rule: Int32(j), before: before))
            }
        }
    }

    /// Forgets the alert log of days no revision can reach any more (the log then starts after
    /// them, should the window grow later).
    func pruneAlertLog(_ st: inout UserState) {
        guard let closed = st.lastClosedDay, st.alertLogStart != .min else { return }
        let keep = closed - DayNumber(configuration.revisionDays) + 1
        guard st.alertLogStart < keep else { return }
        st.alertLogStart = keep
        if !st.alertLog.isEmpty { st.alertLog.removeAll { $0.day < keep } }
    }
}
