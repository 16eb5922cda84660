import MobilityModel

/// A user's local ISO week: Monday through Sunday.
package struct ISOWeek: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The ISO week-numbering year.
    package var year: Int
    /// The week, 1…53.
    package var week: Int

    /// Creates a week from its fields (not validated).
    package init(year: Int, week: Int) {
        self.year = year
        self.week = week
    }

    /// `2026-W10`.
    package var description: String { "\(year)-W\(week < 10 ? "0" : "")\(week)" }

    /// Orders weeks in time.
    package static func < (a: ISOWeek, b: ISOWeek) -> Bool { (a.year, a.week) < (b.year, b.week) }
}

/// The weekly care-team report of one user: this week against last week and the pre-injury
/// baseline, the days without data, the collection conditions, the alerts and annotations.
/// Published on `{root}/users/{u}/reports/weekly` and kept in the store.
package struct WeeklyDigest: Hashable, Sendable {
    /// The user id.
    package var user: String
    /// The week.
    package var week: ISOWeek
    /// Its Monday.
    package var firstDay: DayNumber
    /// Its Sunday.
    package var lastDay: DayNumber
    /// One summary per declared trend panel (walking speed, double support), in spec order.
    package var metrics: [MetricSummary]
    /// The six-minute-walk summary, if declared.
    package var sixMinuteWalk: SixMinuteWalkSummary?
    /// Shares of each collection condition over the week.
    package var conditions: [ConditionShare]
    /// Alert episodes that fired, were active or resolved during the week.
    package var alerts: [AlertInWeek]
    /// Clinical events and annotations that overlap the week.
    package var annotations: [TimelineEvent]
    /// Sentences from the explanation rules that fired during the week, with their numbers.
    package var explanations: [String]

    package init(
        user: String, week: ISOWeek, firstDay: DayNumber, lastDay: DayNumber, metrics: [MetricSummary] = [],
        sixMinuteWalk: SixMinuteWalkSummary? = nil, conditions: [ConditionShare] = [], alerts: [AlertInWeek] = [],
        annotations: [TimelineEvent] = [], explanations: [String] = []
    ) {
        self.user = user
        self.week = week
        self.firstDay = firstDay
        self.lastDay = lastDay
        self.metrics = metrics
        self.sixMinuteWalk = sixMinuteWalk
        self.conditions = conditions
        self.alerts = alerts
        self.annotations = annotations
        self.explanations = explanations
    }

    /// One trend panel's numbers, in its display unit.
    package struct MetricSummary: Hashable, Sendable {
        /// The panel's title.
        package var title: String
        /// The daily series' name.
        package var series: String
        /// The unit the numbers are in.
        package var unit: DisplayUnit
        /// This week.
        package var thisWeek: WeekFigures
        /// The week before.
        package var lastWeek: WeekFigures
        /// Mean of the daily series over the baseline days before the latest clinical event.
        package var baseline: Double?
        /// Least-squares slope of the smoothed series over this week, per week; nil with < 4 days.
        package var trendPerWeek: Double?
        /// True when a lower value is better.
        package var lowerIsBetter: Bool

        package init(
            title: String, series: String, unit: DisplayUnit, thisWeek: WeekFigures, lastWeek: WeekFigures, baseline: Double?,
            trendPerWeek: Double?, lowerIsBetter: Bool
        ) {
            self.title = title
            self.series = series
            self.unit = unit
            self.thisWeek = thisWeek
            self.lastWeek = lastWeek
            self.baseline = baseline
            self.trendPerWeek = trendPerWeek
            self.lowerIsBetter = lowerIsBetter
        }
    }

    /// One week's figures of a trend panel.
    package struct WeekFigures: Hashable, Sendable {
        /// Mean of the daily values over the days with data.
        package var dailyMean: Double?
        /// The smoothed series' value on the week's last day with one.
        package var smoothedLast: Double?
        /// Days of the week with a daily value.
        package var daysWithData: Int
        /// Days of the week without one (missing, not zero).
        package var daysWithoutData: Int

        /// Creates figures.
        package init(dailyMean: Double?, smoothedLast: Double?, daysWithData: Int, daysWithoutData: Int) {
            self.dailyMean = dailyMean
            self.smoothedLast = smoothedLast
            self.daysWithData = daysWithData
            self.daysWithoutData = daysWithoutData
        }
    }

    /// The week's six-minute walks.
    package struct SixMinuteWalkSummary: Hashable, Sendable {
        /// The unit.
        package var unit: DisplayUnit
        /// Clinic tests of the week: (day, value).
        package var clinic: [DayValue]
        /// Watch estimates of the week: (day, value, provisional).
        package var watch: [DayValue]

        package init(unit: DisplayUnit, clinic: [DayValue], watch: [DayValue]) {
            self.unit = unit
            self.clinic = clinic
            self.watch = watch
        }
    }

    /// A value on a day, provisional when the rule named by the spec was active.
    package struct DayValue: Hashable, Sendable {
        /// The day.
        package var day: DayNumber
        /// The value in the display unit.
        package var value: Double
        /// True for an uncalibrated or capped estimate.
        package var provisional: Bool

        package init(day: DayNumber, value: Double, provisional: Bool = false) {
            self.day = day
            self.value = value
            self.provisional = provisional
        }
    }

    /// The share of samples of one condition in its group over the week.
    package struct ConditionShare: Hashable, Sendable {
        /// The group, e.g. `placement`.
        package var group: String
        /// The label, e.g. `left`.
        package var label: String
        /// Samples counted.
        package var count: Int
        /// `count` over the group's total (0 when the group counted nothing).
        package var share: Double

        package init(group: String, label: String, count: Int, share: Double) {
            self.group = group
            self.label = label
            self.count = count
            self.share = share
        }
    }

    /// An alert episode as the week saw it.
    package struct AlertInWeek: Hashable, Sendable {
        /// The episode.
        package var episode: AlertEpisode
        /// What happened to it during the week.
        package var state: State

        package init(episode: AlertEpisode, state: State) {
            self.episode = episode
            self.state = state
        }

        /// Fired during the week (possibly ended too), active throughout, or resolved or expired
        /// during it (expired: its rule stopped watching while it held, not a recovery), or
        /// withdrawn by the week's end (late data or a late timeline entry showed it did not hold).
        package enum State: String, Hashable, Sendable {
            case fired, active, resolved, expired, withdrawn
        }
    }
}
