import CareReports
import MobilityModel

/// A plausible weekly digest computed in the test from a history, for the pages to render (the
/// digest proper is computed by the report's own code; here only the page's rendering is tested).
enum DigestFixture {
    /// The ISO week holding `day` and its Monday.
    static func week(of day: DayNumber) -> (ISOWeek, DayNumber) {
        let weekday = DayNumber(((Int(day) % 7) + 7 + 3) % 7)  // 1970-01-01 was a Thursday; 0 = Monday
        let monday = day - weekday, thursday = monday + 3
        let year = CivilDate(dayNumber: thursday).year
        let jan1 = CivilDate(year: year, month: 1, day: 1).dayNumber
        return (ISOWeek(year: year, week: Int(thursday - jan1) / 7 + 1), monday)
    }

    /// The digest of the week holding `day`.
    static func make(_ h: UserHistory, _ spec: ReportSpec, weekOf day: DayNumber, explanations: [String] = []) -> WeeklyDigest {
        let (week, monday) = week(of: day)
        let sunday = monday + 6
        let injury = h.timeline.filter { $0.category == .clinical && $0.firstDay <= sunday }.map(\.firstDay).max()
        func figures(_ p: ReportSpec.TrendPanel, _ first: DayNumber) -> WeeklyDigest.WeekFigures {
            let daily = (first...(first + 6)).compactMap { h.series[p.daily]?[$0] ?? nil }
            let smoothed = p.smoothed.flatMap { s in (first...(first + 6)).reversed().lazy.compactMap { h.series[s]?[$0] ?? nil }.first }
            return .init(dailyMean: daily.isEmpty ? nil : daily.reduce(0, +) / Double(daily.count) * p.displayUnit.factor,
                         smoothedLast: smoothed.map { $0 * p.displayUnit.factor }, daysWithData: daily.count, daysWithoutData: 7 - daily.count)
        }
        let metrics = [spec.speed, spec.doubleSupport].compactMap { $0 }.map { p -> WeeklyDigest.MetricSummary in
            let base: Double? = injury.flatMap { i in
                let v = ((i - 30)..<i).compactMap { h.series[p.daily]?[$0] ?? nil }
                return v.isEmpty ? nil : v.reduce(0, +) / Double(v.count) * p.displayUnit.factor
            }
            let pts = (monday...sunday).compactMap { d in (p.smoothed.flatMap { h.series[$0]?[d] ?? nil }).map { (Double(d - monday), $0 * p.displayUnit.factor) } }
            var slope: Double?
            if pts.count >= 4 {
                let mx = pts.map(\.0).reduce(0, +) / Double(pts.count), my = pts.map(\.1).reduce(0, +) / Double(pts.count)
                slope = pts.map { ($0.0 - mx) * ($0.1 - my) }.reduce(0, +) / pts.map { ($0.0 - mx) * ($0.0 - mx) }.reduce(0, +) * 7
            }
            return .init(title: p.title, series: p.daily, unit: p.displayUnit, thisWeek: figures(p, monday), lastWeek: figures(p, monday - 7),
                         baseline: base, trendPerWeek: slope, lowerIsBetter: p.lowerIsBetter)
        }
        let walk = spec.sixMinuteWalk.map { w in
            WeeklyDigest.SixMinuteWalkSummary(
                unit: w.displayUnit,
                clinic: (monday...sunday).compactMap { d in (h.series[w.clinic]?[d] ?? nil).map { .init(day: d, value: $0 * w.displayUnit.factor) } },
                watch: (monday...sunday).compactMap { d in
                    (h.series[w.watch]?[d] ?? nil).map { v in
                        .init(day: d, value: v * w.displayUnit.factor, provisional: h.alerts.contains { $0.rule == w.provisionalRule && $0.isActive(on: d) })
                    }
                })
        }
        let alerts = h.alerts.filter { $0.firedDay <= sunday && ($0.resolvedDay ?? .max) >= monday }.map { e in
            WeeklyDigest.AlertInWeek(episode: e, state: e.firedDay >= monday ? .fired : e.resolvedDay.map { $0 <= sunday } == true ? .resolved : .active)
        }
        return WeeklyDigest(user: h.user, week: week, firstDay: monday, lastDay: sunday, metrics: metrics, sixMinuteWalk: walk,
                            conditions: [.init(group: "placement", label: "left", count: 61, share: 0.58), .init(group: "placement", label: "right", count: 44, share: 0.42),
                                         .init(group: "source", label: "device", count: 105, share: 1), .init(group: "source", label: "user-entered", count: 0, share: 0)],
                            alerts: alerts, annotations: h.timeline.filter { $0.lastDay >= monday && $0.firstDay <= sunday }, explanations: explanations)
    }
}
