import MobilityModel

/// The six-minute-walk panel's data over a window, in its display unit: clinic tests, and watch
/// estimates marked provisional on days an episode of the spec's provisional rule was active.
struct SixMinuteWalkSeries {
    /// Clinic tests.
    var clinic: [WeeklyDigest.DayValue] = []
    /// Watch estimates.
    var watch: [WeeklyDigest.DayValue] = []

    /// Extracts `panel` of `history` over `window`.
    init(_ history: UserHistory, _ panel: ReportSpec.SixMinuteWalkPanel, window: ClosedRange<DayNumber>) {
        let f = panel.displayUnit.factor
        let episodes = history.alerts.filter { $0.rule == panel.provisionalRule }
        let clinicSeries = history.series[panel.clinic] ?? [:], watchSeries = history.series[panel.watch] ?? [:]
        for d in window {
            if let v = clinicSeries[d] ?? nil, v.isFinite { clinic.append(.init(day: d, value: v * f)) }
            if let v = watchSeries[d] ?? nil, v.isFinite {
                watch.append(.init(day: d, value: v * f, provisional: episodes.contains { $0.isActive(on: d) }))
            }
        }
    }

    /// The smallest and largest value drawn.
    var valueRange: ClosedRange<Double>? {
        let values = clinic.map(\.value) + watch.map(\.value)
        guard let lo = values.min(), let hi = values.max() else { return nil }
        return lo...hi
    }
}

extension AlertEpisode {
    /// True when the episode was active on day `d`: from the day it fired up to, not including,
    /// the day it resolved (the value that resolved it is no longer provisional).
    package func isActive(on d: DayNumber) -> Bool { d >= firedDay && (endedDay.map { d < $0 } ?? true) }
}
