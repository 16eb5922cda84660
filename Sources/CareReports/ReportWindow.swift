import MobilityModel

/// Which days a page's charts cover.
package enum ReportWindow {
    /// Days before the latest clinical event the recovery window starts (the talk's baseline month).
    package static let daysBefore: DayNumber = 30
    /// Days after it the recovery window ends.
    package static let daysAfter: DayNumber = 60
    /// Weeks of context the weekly page draws, ending with the report's week.
    package static let contextWeeks: DayNumber = 8
    /// The most days one chart draws (a longer range keeps its latest days), so that a long
    /// history cannot grow a page without bound.
    package static let maxDays: DayNumber = 400

    /// The first and last day with a recorded value (or a nil, i.e. a recorded missing day) in any
    /// of the spec's series; nil when none was recorded.
    package static func available(_ history: UserHistory, _ spec: ReportSpec) -> ClosedRange<DayNumber>? {
        var lo = DayNumber.max, hi = DayNumber.min
        for name in spec.seriesNames {
            guard let s = history.series[name] else { continue }
            for d in s.keys {
                lo = min(lo, d)
                hi = max(hi, d)
            }
        }
        return lo <= hi ? lo...hi : nil
    }

    /// The latest clinical event on or before `day` (any day when nil).
    package static func latestClinicalEvent(_ history: UserHistory, onOrBefore day: DayNumber? = nil) -> TimelineEvent? {
        history.timeline.filter { $0.category == .clinical && (day == nil || $0.firstDay <= day!) }
            .max { ($0.firstDay, $0.id) < ($1.firstDay, $1.id) }
    }

    /// The recovery window: 30 days before to 60 days after the latest clinical event, within the
    /// recorded range; the recorded range's last 91 days without a clinical event (or when the
    /// event's window holds no record); nil without any record.
    package static func recovery(_ history: UserHistory, _ spec: ReportSpec) -> ClosedRange<DayNumber>? {
        guard let have = available(history, spec) else { return nil }
        if let e = latestClinicalEvent(history) {
            let lo = max(e.firstDay - daysBefore, have.lowerBound), hi = min(e.firstDay + daysAfter, have.upperBound)
            if lo <= hi { return bounded(lo...hi) }
        }
        return bounded(max(have.lowerBound, have.upperBound - daysBefore - daysAfter)...have.upperBound)
    }

    /// The weekly page's window: the eight weeks ending with the digest's Sunday, starting no
    /// earlier than the first record.
    package static func weekly(_ digest: WeeklyDigest, _ history: UserHistory, _ spec: ReportSpec) -> ClosedRange<DayNumber> {
        var lo = digest.lastDay - contextWeeks * 7 + 1
        if let have = available(history, spec), have.lowerBound > lo { lo = min(have.lowerBound, digest.firstDay) }
        return bounded(min(lo, digest.firstDay)...max(digest.lastDay, digest.firstDay))
    }

    private static func bounded(_ r: ClosedRange<DayNumber>) -> ClosedRange<DayNumber> {
        r.upperBound - r.lowerBound + 1 > maxDays ? (r.upperBound - maxDays + 1)...r.upperBound : r
    }
}

extension ReportSpec {
    /// The series the spec draws.
    var seriesNames: [String] {
        var names: [String] = []
        for p in [speed, doubleSupport].compactMap({ $0 }) {
            names.append(p.daily)
            if let s = p.smoothed { names.append(s) }
        }
        if let w = sixMinuteWalk { names += [w.clinic, w.watch] }
        return names
    }
}
