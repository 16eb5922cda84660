import MobilityModel
import RuleLanguage

/// A state to and from its ``UserSnapshot``: the only place that knows both forms.
extension UserState {
    /// The state as a snapshot: the head whole; the open days all of them, or with `changesOnly`
    /// the ones changed since ``markPersisted()`` (and ``foldedBefore``). The open values are
    /// shared, not copied.
    func snapshot(changesOnly: Bool) -> UserSnapshot {
        var s = UserSnapshot(user: user)
        s.calendar = calendar.identifier
        s.hasProfile = hasProfile
        s.careTeams = careTeams
        s.firstDay = firstDay
        s.lastClosedDay = lastClosedDay
        s.foldedInputs = foldedInputs.map(UserSnapshot.FoldedInput.init)
        if !foldedRuns.isEmpty {
            s.foldedDays.reserveCapacity(foldedRowCount)
            s.foldedValues.reserveCapacity(foldedRowCount * foldedColumns.nonzeroBitCount)
            forEachFoldedDay { day, mask, values in
                s.foldedDays.append(UserSnapshot.FoldedDay(day: day, mask: mask))
                s.foldedValues.append(contentsOf: values)
            }
        }
        s.syncIndex = syncIndex
        s.tombstones = tombstones
        if !events.isEmpty { s.events = events.values.sorted { $0.id < $1.id } }
        for (name, sm) in zip(alertNames, alertStates) where sm != AlertStateMachine() {
            s.alerts.append(UserSnapshot.Alert(rule: name, machine: sm))
        }
        if s.alerts.count > 1 { s.alerts.sort { $0.rule < $1.rule } }
        if !revisedDays.isEmpty { s.revisedDays = revisedDays.sorted() }
        s.alertLog = alertLog.map { UserSnapshot.AlertLogEntry(day: $0.day, rule: alertNames[Int($0.rule)], machine: $0.before) }
        if alertLogStart != .min { s.alertLogStart = alertLogStart }
        for d in openDays where !changesOnly || d.dirty {
            s.openDays.append(
                UserSnapshot.OpenDay(
                    day: d.day, start: Int(d.start), count: Int(d.count),
                    changedFrom: changesOnly ? d.dirtyFrom : 0, storedCount: changesOnly ? Int(d.storedCount) : 0))
        }
        s.openValues = openValues
        s.foldedBefore = changesOnly ? foldedBefore : nil
        return s
    }

    /// A state restored from a snapshot, its alert states aligned with `alertNames` (the rules'
    /// array, shared) and its folded values expressed for `inputs` (the rules' daily inputs).
    init(restoring s: consuming UserSnapshot, alertNames rules: [String], inputs: [DailyInput]) {
        self.init(user: s.user, calendar: LocalCalendar.cached(s.calendar) ?? .utc)
        hasProfile = s.hasProfile
        careTeams = s.careTeams
        firstDay = s.firstDay
        lastClosedDay = s.lastClosedDay
        restoreFolded(&s, inputs: inputs)
        syncIndex = s.syncIndex
        tombstones = s.tombstones
        for e in s.events { events[e.id] = e }
        if !events.isEmpty { rebuildBoundaries() }
        if !s.alerts.isEmpty {
            self.alertNames = s.alerts.map(\.rule)
            alertStates = s.alerts.map(\.machine)
        }
        alignAlerts(to: rules)
        for r in s.alertLog {
            if let k = rules.firstIndex(of: r.rule) { alertLog.append(AlertLogEntry(day: r.day, rule: Int32(k), before: r.machine)) }
        }
        // Without a stored log, no day closed before this restore can be re-evaluated.
        alertLogStart = s.alertLogStart ?? s.lastClosedDay.map { $0 + 1 } ?? .min
        revisedDays = Set(s.revisedDays)
        restoreOpenDays(&s)
    }

    /// The folded table from the snapshot's days (``restoreFolded(_:values:)``), then expressed
    /// for the rules' inputs.
    private mutating func restoreFolded(_ s: inout UserSnapshot, inputs: [DailyInput]) {
        if s.foldedInputs.elementsEqual(inputs, by: { $0 == UserSnapshot.FoldedInput($1) }) {
            foldedInputs = inputs  // the rules' array, shared
        } else {
            foldedInputs = s.foldedInputs.map(\.dailyInput)
        }
        if !s.foldedDays.isEmpty { restoreFolded(s.foldedDays, values: s.foldedValues) }
        remapFolded(to: inputs)
    }

    /// The open days: the snapshot's values array itself when its days tile it in order (a store's
    /// snapshot), else day by day.
    private mutating func restoreOpenDays(_ s: inout UserSnapshot) {
        var tiles = true, end = 0, last: DayNumber?
        for d in s.openDays {
            if d.start != end || last.map({ d.day <= $0 }) == true { tiles = false; break }
            end += d.count
            last = d.day
        }
        if tiles && end == s.openValues.count {
            openValues = s.openValues
            s.openValues = []
            openDays.reserveCapacity(s.openDays.count)
            for d in s.openDays {
                openDays.append(
                    OpenDay(
                        day: d.day, start: Int32(d.start), count: Int32(d.count), changedFrom: Int32(d.changedFrom ?? -1),
                        storedCount: Int32(d.storedCount)))
            }
            return
        }
        openValues.reserveCapacity(s.openDays.reduce(0) { $0 + $1.count })
        for d in s.openDays {
            if openDays.last?.day != d.day {
                openDays.append(OpenDay(day: d.day, start: Int32(openValues.count), count: 0, changedFrom: -1, storedCount: 0))
            }
            let k = openDays.count - 1
            openValues.append(contentsOf: s.values(of: d))
            if let from = d.changedFrom { openDays[k].touch(from: Int(openDays[k].count) + from) }
            openDays[k].count += Int32(d.count)
            openDays[k].storedCount += Int32(d.storedCount)
        }
    }
}
