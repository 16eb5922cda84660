import MobilityModel

/// Computing a week's digest from a user's history: pure, no clock; days are the user's local days.
extension WeeklyDigest {
    /// The digest of `week`: for each trend panel this week against last week and the baseline
    /// (the mean of the daily series over `baselineDays` ending the day before the latest clinical
    /// event of the panel's kind on or before the week's Sunday, cut at the clinical event before
    /// that, as a `before:` window of the rules), the smoothed series' last value and its
    /// least-squares trend per week, days with and without data (missing is not zero); the six-
    /// minute walks, the condition shares, the alert episodes, annotations and explanations.
    package static func make(history h: UserHistory, spec: ReportSpec, week: ISOWeek) -> WeeklyDigest {
        let mon = week.monday, sun = week.sunday
        var d = WeeklyDigest(user: h.user, week: week, firstDay: mon, lastDay: sun)
        for panel in [spec.speed, spec.doubleSupport].compactMap({ $0 }) {
            d.metrics.append(summary(panel, h, mon))
        }
        if let w = spec.sixMinuteWalk {
            let provisional = h.alerts.filter { $0.rule == w.provisionalRule }
            func values(_ name: String, checkProvisional: Bool) -> [DayValue] {
                (mon...sun).compactMap { day in
                    guard case .some(.some(let v)) = h.series[name]?[day] else { return nil }
                    let p = checkProvisional && provisional.contains { $0.firedDay <= day && ($0.endedDay.map { day < $0 } ?? true) }
                    return DayValue(day: day, value: v * w.displayUnit.factor, provisional: p)
                }
            }
            d.sixMinuteWalk = SixMinuteWalkSummary(
                unit: w.displayUnit, clinic: values(w.clinic, checkProvisional: false),
                watch: values(w.watch, checkProvisional: true))
        }
        var totals: [String: Double] = [:]
        let counts = spec.conditions.map { c in (c, (mon...sun).reduce(0.0) { $0 + ((h.series[c.series]?[$1] ?? nil) ?? 0) }) }
        for (c, n) in counts { totals[c.group, default: 0] += n }
        d.conditions = counts.map { c, n in
            ConditionShare(group: c.group, label: c.label, count: Int(n.rounded()), share: totals[c.group]! > 0 ? n / totals[c.group]! : 0)
        }
        for whole in h.alerts
        where whole.firedDay <= sun && ((whole.endedDay.map { $0 >= mon } ?? true) || (mon...sun).contains(whole.withdrawnDay ?? .min)) {
            // What it said up to the week's Sunday, not what a later reminder or its end said.
            let e = whole.asOf(sun)
            let state: AlertInWeek.State =
                e.withdrawnDay != nil ? .withdrawn : e.firedDay >= mon ? .fired : e.endedDay != nil ? (e.expired ? .expired : .resolved) : .active
            d.alerts.append(AlertInWeek(episode: e, state: state))
            if spec.explanations.contains(e.rule) { d.explanations.append(e.firedHeadline ?? e.headline) }
        }
        d.annotations = h.timeline.filter { $0.firstDay <= sun && $0.lastDay >= mon }
        return d
    }

    static func summary(_ p: ReportSpec.TrendPanel, _ h: UserHistory, _ mon: DayNumber) -> MetricSummary {
        let f = p.displayUnit.factor
        let daily = h.series[p.daily] ?? [:]
        let smoothed = p.smoothed.flatMap { h.series[$0] } ?? [:]
        func value(_ s: [DayNumber: Double?], _ day: DayNumber) -> Double? { s[day] ?? nil }
        func figures(_ first: DayNumber) -> WeekFigures {
            let days = first...(first + 6)
            let known = days.compactMap { value(daily, $0) }
            let last = days.reversed().lazy.compactMap { value(smoothed, $0) }.first
            return WeekFigures(
                dailyMean: known.isEmpty ? nil : known.reduce(0, +) / Double(known.count) * f, smoothedLast: last.map { $0 * f },
                daysWithData: known.count, daysWithoutData: 7 - known.count)
        }
        var baseline: Double?
        if let n = p.baselineDays {
            let clinical = h.timeline.filter { $0.category == .clinical && $0.firstDay <= mon + 6 }
            if let event = clinical.filter({ p.baselineEvent == nil || $0.kind == p.baselineEvent }).map(\.firstDay).max() {
                let segmentStart = clinical.map(\.firstDay).filter { $0 < event }.max() ?? .min
                let known = (max(event - DayNumber(n), segmentStart)..<event).compactMap { value(daily, $0) }
                if !known.isEmpty { baseline = known.reduce(0, +) / Double(known.count) * f }
            }
        }
        // Least-squares slope of the smoothed series (the daily one without) over the week's days with a value.
        let trendSeries = p.smoothed == nil ? daily : smoothed
        let points = (mon...(mon + 6)).compactMap { day in value(trendSeries, day).map { (Double(day - mon), $0 * f) } }
        var trend: Double?
        if points.count >= 4 {
            let mx = points.map(\.0).reduce(0, +) / Double(points.count), my = points.map(\.1).reduce(0, +) / Double(points.count)
            let sxx = points.reduce(0) { $0 + ($1.0 - mx) * ($1.0 - mx) }, sxy = points.reduce(0) { $0 + ($1.0 - mx) * ($1.1 - my) }
            trend = sxy / sxx * 7
        }
        return MetricSummary(
            title: p.title, series: p.daily, unit: p.displayUnit, thisWeek: figures(mon), lastWeek: figures(mon - 7),
            baseline: baseline, trendPerWeek: trend, lowerIsBetter: p.lowerIsBetter)
    }
}
