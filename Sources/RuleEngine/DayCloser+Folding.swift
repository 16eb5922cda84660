import MobilityModel
import RuleLanguage

/// Folding: open days past the allowed lateness become rows of the folded table.
extension DayCloser {
    /// Folds the open days no sample can reach any more (past the allowed lateness, with a day of
    /// margin for samples written in another zone) into their daily-input values.
    func fold(_ ev: inout Evaluator, now: Timestamp) {
        guard program.inputs.count <= 64, let closed = ev.user.lastClosedDay else { return }
        let limit = min(closed, ev.user.calendar.day(of: now.adding(seconds: -configuration.allowedLatenessSeconds)) - 2)
        guard let firstOpen = ev.user.openDays.first, firstOpen.day <= limit else { return }
        if ev.user.foldedInputs.isEmpty { ev.user.foldedInputs = program.inputs }
        var n = 0
        withUnsafeTemporaryAllocation(of: Double.self, capacity: program.inputs.count) { values in
            while n < ev.user.openDays.count, ev.user.openDays[n].day <= limit {
                let d = ev.user.openDays[n].day
                var mask: UInt64 = 0, k = 0
                for i in program.inputs.indices {
                    if let v = ev.daily(i, d) { mask |= 1 << UInt64(i); values[k] = v; k += 1 }
                }
                ev.user.appendFoldedDay(d, mask: mask, values: UnsafeBufferPointer(rebasing: values[0..<k]))
                n += 1
            }
        }
        if !ev.user.syncIndex.isEmpty {
            var dropped = Set<SampleID>()
            for v in ev.user.openValues[..<Int(ev.user.openDays[n - 1].range.upperBound)] { dropped.insert(v.id) }
            ev.user.syncIndex.removeAll { dropped.contains($0.id) }
        }
        ev.user.removeFirstOpenDays(n)
        ev.user.foldedBefore = limit + 1
    }
}
