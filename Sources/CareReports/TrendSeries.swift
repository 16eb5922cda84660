import MobilityModel

/// A trend panel's data over a window, in its display unit: the daily points, the smoothed line's
/// segments (broken at clinical events and at days without a value), the missing days, the baseline.
struct TrendSeries {
    /// Days with a daily value: (day, display value), in day order.
    var points: [(day: DayNumber, value: Double)] = []
    /// Runs of consecutive smoothed values, never crossing a clinical event.
    var segments: [[(day: DayNumber, value: Double)]] = []
    /// Days of the window whose daily value is nil or absent.
    var missing: [DayNumber] = []
    /// The baseline (display unit) and the clinical event it is taken before.
    var baseline: (value: Double, before: TimelineEvent)?

    /// Extracts panel `panel` of `history` over `window`; the baseline is taken before the latest
    /// clinical event on or before `window`'s last day.
    init(_ history: UserHistory, _ panel: ReportSpec.TrendPanel, window: ClosedRange<DayNumber>) {
        let f = panel.displayUnit.factor
        let daily = history.series[panel.daily] ?? [:]
        for d in window {
            if let v = daily[d] ?? nil, v.isFinite { points.append((d, v * f)) } else { missing.append(d) }
        }
        let breaks = Set(history.timeline.filter { $0.category == .clinical }.map(\.firstDay))
        if let name = panel.smoothed, let smoothed = history.series[name] {
            var run: [(day: DayNumber, value: Double)] = []
            for d in window {
                if breaks.contains(d), !run.isEmpty {
                    segments.append(run)
                    run = []
                }
                if let v = smoothed[d] ?? nil, v.isFinite {
                    run.append((d, v * f))
                } else if !run.isEmpty {
                    segments.append(run)
                    run = []
                }
            }
            if !run.isEmpty { segments.append(run) }
        }
        if let n = panel.baselineDays, n > 0, let e = ReportWindow.latestClinicalEvent(history, onOrBefore: window.upperBound) {
            var sum = 0.0, count = 0
            for d in (e.firstDay - DayNumber(n))..<e.firstDay {
                if let v = daily[d] ?? nil, v.isFinite {
                    sum += v
                    count += 1
                }
            }
            if count > 0 { baseline = (sum / Double(count) * f, e) }
        }
    }

    /// The smallest and largest value drawn (points, line, baseline); nil when nothing is drawn.
    var valueRange: ClosedRange<Double>? {
        var values = points.map(\.value) + segments.flatMap { $0.map(\.value) }
        if let b = baseline { values.append(b.value) }
        guard let lo = values.min(), let hi = values.max() else { return nil }
        return lo...hi
    }
}
