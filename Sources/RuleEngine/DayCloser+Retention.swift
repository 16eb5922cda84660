import MobilityModel
import RuleLanguage

/// Retention: which days a user's rules can still reach, and dropping the folded days they cannot.
extension DayCloser {
    /// The days still needed by some rule for a user: the rules' look-back before the earliest
    /// day a late sample (the allowed lateness) or a revision (``EngineConfiguration/revisionDays``)
    /// can make the engine evaluate again, and the anchored windows (baselines, recovery windows)
    /// around the latest clinical event of each kind.
    func retainedRanges(_ st: UserState) -> [ClosedRange<DayNumber>] {
        guard let closed = st.lastClosedDay else { return [] }
        let reach = max(DayNumber(configuration.allowedLatenessSeconds / 86_400) + 2, DayNumber(configuration.revisionDays))
        let recent = closed - DayNumber(program.lookbackDays) - reach
        var ranges = [recent...DayNumber.max]
        if program.anchoredWindowDays > 0 {
            var latestByKind: [String: DayNumber] = [:]
            for e in st.events.values where e.category == .clinical { latestByKind[e.kind] = max(latestByKind[e.kind] ?? e.firstDay, e.firstDay) }
            let a = DayNumber(program.anchoredWindowDays)
            for d in latestByKind.values { ranges.append((d - a - 1)...(d + a)) }
        }
        return ranges
    }

    /// Drops folded days that no retained range covers: no window reaches them. (Open days are
    /// never dropped here; they fold first.)
    func compact(_ st: inout UserState) {
        guard !st.foldedRuns.isEmpty else { return }
        let ranges = retainedRanges(st)
        guard !ranges.isEmpty else { return }
        st.keepFoldedDays { d in ranges.contains { $0.contains(d) } }
    }
}
