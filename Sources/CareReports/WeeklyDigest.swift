import MobilityModel

/// A user's local ISO week: Monday through Sunday.
public struct ISOWeek: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The ISO week-numbering year.
    public var year: Int
    /// The week, 1…53.
    public var week: Int

    /// Creates a week from its fields (not validated).
    public init(year: Int, week: Int) {
        self.year = year
        self.week = week
    }

    /// `2026-W10`.
    public var description: String { "\(year)-W\(week < 10 ? "0" : "")\(week)" }

    /// Orders weeks in time.
    public static func < (a: ISOWeek, b: ISOWeek) -> Bool { (a.year, a.week) < (b.year, b.week) }
}

/// The weekly care-team report of one user: this week against last week and the pre-injury
/// baseline, the days without data, the collection conditions, the alerts and annotations.
/// Published on `{root}/users/{u}/reports/weekly` and kept in the store.
public struct WeeklyDigest: Hashable, Sendable {
    /// The user id.
    public var user: String
    /// The week.
    public var week: ISOWeek
    /// Its Monday.
    public var firstDay: DayNumber
    /// Its Sunday.
    public var lastDay: DayNumber
    /// One summary per declared trend panel (walking speed, double support), in spec order.
    public var metrics: [MetricSummary]
    /// The six-minute-walk summary, if declared.
    public var sixMinuteWalk: SixMinuteWalkSummary?
    /// Shares of each collection condition over the week.
    public var conditions: [ConditionShare]
    /// Alert episodes that fired, were active or resolved during the week.
    public var alerts: [AlertInWeek]
    /// Clinical events and annotations that overlap the week.
    public var annotations: [TimelineEvent]
    /// Sentences from the explanation rules that fired during the week, with their numbers.
    public var explanations: [String]

    /// Creates a digest.
    public init(
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
    public struct MetricSummary: Hashable, Sendable {
        /// The panel's title.
        public var title: String
        /// The daily series' name.
        public var series: String
        /// The unit the numbers are in.
        public var unit: DisplayUnit
        /// This week.
        public var thisWeek: WeekFigures
        /// The week before.
        public var lastWeek: WeekFigures
        /// Mean of the daily series over the baseline days before the latest clinical event.
        public var baseline: Double?
        /// Least-squares slope of the smoothed series over this week, per week; nil with < 4 days.
        public var trendPerWeek: Double?
        /// True when a lower value is better.
        public var lowerIsBetter: Bool

        /// Creates a summary.
        public init(
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
    public struct WeekFigures: Hashable, Sendable {
        /// Mean of the daily values over the days with data.
        public var dailyMean: Double?
        /// The smoothed series' value on the week's last day with one.
        public var smoothedLast: Double?
        /// Days of the week with a daily value.
        public var daysWithData: Int
        /// Days of the week without one (missing, not zero).
        public var daysWithoutData: Int

        /// Creates figures.
        public init(dailyMean: Double?, smoothedLast: Double?, daysWithData: Int, daysWithoutData: Int) {
            self.dailyMean = dailyMean
            self.smoothedLast = smoothedLast
            self.daysWithData = daysWithData
            self.daysWithoutData = daysWithoutData
        }
    }

    /// The week's six-minute walks.
    public struct SixMinuteWalkSummary: Hashable, Sendable {
        /// The unit.
        public var unit: DisplayUnit
        /// Clinic tests of the week: (day, value).
        public var clinic: [DayValue]
        /// Watch estimates of the week: (day, value, provisional).
        public var watch: [DayValue]

        /// Creates a summary.
        public init(unit: DisplayUnit, clinic: [DayValue], watch: [DayValue]) {
            self.unit = unit
            self.clinic = clinic
            self.watch = watch
        }
    }

    /// A value on a day, provisional when the rule named by the spec was active.
    public struct DayValue: Hashable, Sendable {
        /// The day.
        public var day: DayNumber
        /// The value in the display unit.
        public var value: Double
        /// True for an uncalibrated or capped estimate.
        public var provisional: Bool

        /// Creates a value.
        public init(day: DayNumber, value: Double, provisional: Bool = false) {
            self.day = day
            self.value = value
            self.provisional = provisional
        }
    }

    /// The share of samples of one condition in its group over the week.
    public struct ConditionShare: Hashable, Sendable {
        /// The group, e.g. `placement`.
        public var group: String
        /// The label, e.g. `left`.
        public var label: String
        /// Samples counted.
        public var count: Int
        /// `count` over the group's total (0 when the group counted nothing).
        public var share: Double

        /// Creates a share.
        public init(group: String, label: String, count: Int, share: Double) {
            self.group = group
            self.label = label
            self.count = count
            self.share = share
        }
    }

    /// An alert episode as the week saw it.
    public struct AlertInWeek: Hashable, Sendable {
        /// The episode.
        public var episode: AlertEpisode
        /// What happened to it during the week.
        public var state: State

        /// Creates an entry.
        public init(episode: AlertEpisode, state: State) {
            self.episode = episode
            self.state = state
        }

        /// Fired during the week (possibly ended too), active throughout, or resolved or expired
        /// during it (expired: its rule stopped watching while it held, not a recovery), or
        /// withdrawn by the week's end (late data or a late timeline entry showed it did not hold).
        public enum State: String, Hashable, Sendable {
            case fired, active, resolved, expired, withdrawn
        }
    }
}
