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
