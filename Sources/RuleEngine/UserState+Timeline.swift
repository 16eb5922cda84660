import MobilityModel

/// The user's timeline: clinical events (segment boundaries) and annotations.
extension UserState {
    /// The latest event of a kind on or before a day.
    func latestEvent(_ kind: String, onOrBefore d: DayNumber) -> DayNumber? {
        var best: DayNumber?
        for e in events.values where e.kind == kind && e.category == .clinical && e.firstDay <= d {
            if best == nil || e.firstDay > best! { best = e.firstDay }
        }
        return best
    }

    /// The first day of the segment containing `d` (the latest clinical event on or before it).
    func segmentStart(_ d: DayNumber) -> DayNumber {
        var lo = DayNumber.min
        for b in boundaries where b <= d { lo = b }
        return lo
    }

    /// The first boundary after `d`, if any.
    func nextBoundary(after d: DayNumber) -> DayNumber? { boundaries.first { $0 > d } }

    /// Marks the closed days a timeline change touches as revised: from `changed` (the earliest
    /// day the change concerns), within the `held` days the engine still holds data of. A
    /// clinical change (`segments`) dated before the revision window (`revisionDays` back) also
    /// marks ``segmentsChangedBeforeRevision``: the alert states at the window's start were
    /// evaluated under other segments, so that revision leaves the alerts as published.
    mutating func reviseDays(from changed: DayNumber, segments: Bool, held: Int64, revisionDays: Int) {
        guard let closed = lastClosedDay else { return }
        let from = max(changed, closed - DayNumber(max(held, Int64(revisionDays))))
        if from <= closed { for d in from...closed { revisedDays.insert(d) } }
        if segments, changed <= closed, changed < closed - DayNumber(revisionDays) + 1 { revisedDays.insert(UserState.segmentsChangedBeforeRevision) }
    }

    /// Among ``revisedDays``: a clinical event before the revision window was recorded, moved or
    /// retracted since the days were last evaluated (not a day: no day is this early).
    static let segmentsChangedBeforeRevision = DayNumber.min

    /// Recomputes the segment boundaries from the clinical events (after a restore).
    mutating func rebuildBoundaries() {
        boundaries = Array(Set(events.values.filter { $0.category == .clinical }.map(\.firstDay))).sorted()
    }

    /// The annotations overlapping a day range, sorted by first day, kind and id (the alert
    /// renders them as `kind first..last`).
    func annotations(from lo: DayNumber, to hi: DayNumber) -> [TimelineEvent] {
        events.values.filter { $0.category == .annotation && $0.firstDay <= hi && $0.lastDay >= lo }
            .sorted { ($0.firstDay, $0.kind, $0.id) < ($1.firstDay, $1.kind, $1.id) }
    }
}
