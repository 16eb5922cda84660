/// Which recorded series feed a user's report, as a rule file's `report` block declares them: the
/// report is data, like the rules, not hard-coded in Swift.
public struct ReportSpec: Hashable, Sendable {
    /// The walking-speed panel (recovery panel), if declared.
    public var speed: TrendPanel?
    /// The double-support panel (gait-quality card), if declared.
    public var doubleSupport: TrendPanel?
    /// The six-minute-walk panel (clinic vs watch), if declared.
    public var sixMinuteWalk: SixMinuteWalkPanel?
    /// Series counting samples by collection condition (e.g. placement side, user-entered), shown
    /// as shares of their group: `(group, label, series)`.
    public var conditions: [Condition]
    /// Rules whose firing says something in words about the week (e.g. the gait-quality
    /// explanation); their summaries are quoted in the report.
    public var explanations: [String]

    /// Creates a spec.
    public init(
        speed: TrendPanel? = nil, doubleSupport: TrendPanel? = nil, sixMinuteWalk: SixMinuteWalkPanel? = nil,
        conditions: [Condition] = [], explanations: [String] = []
    ) {
        self.speed = speed
        self.doubleSupport = doubleSupport
        self.sixMinuteWalk = sixMinuteWalk
        self.conditions = conditions
        self.explanations = explanations
    }

    /// A daily series with its smoothed trend and pre-injury baseline.
    public struct TrendPanel: Hashable, Sendable {
        /// Its title, e.g. "Walking speed".
        public var title: String
        /// The daily series (e.g. `speed_p95`), drawn as points.
        public var daily: String
        /// The smoothed series (e.g. `speed_7d`), drawn as a line broken at clinical events.
        public var smoothed: String?
        /// The baseline: the mean of `daily` over this many days before the latest clinical event.
        public var baselineDays: Int?
        /// The kind of that clinical event (`injury`); nil: the latest clinical event of any kind.
        public var baselineEvent: String?
        /// The display unit (e.g. `mph`), converted from the series' SI unit.
        public var displayUnit: DisplayUnit
        /// True when a lower value is better (double support).
        public var lowerIsBetter: Bool

        /// Creates a panel.
        public init(
            title: String, daily: String, smoothed: String?, baselineDays: Int?, displayUnit: DisplayUnit, lowerIsBetter: Bool = false,
            baselineEvent: String? = nil
        ) {
            self.title = title
            self.baselineEvent = baselineEvent
            self.daily = daily
            self.smoothed = smoothed
            self.baselineDays = baselineDays
            self.displayUnit = displayUnit
            self.lowerIsBetter = lowerIsBetter
        }
    }

    /// Clinic tests versus watch estimates of the six-minute-walk distance.
    public struct SixMinuteWalkPanel: Hashable, Sendable {
        /// The clinic (user-entered / non-Apple) series, drawn red.
        public var clinic: String
        /// The watch series, drawn green.
        public var watch: String
        /// The rule whose active episodes mark a watch estimate provisional (hollow).
        public var provisionalRule: String?
        /// The display unit.
        public var displayUnit: DisplayUnit

        /// Creates a panel.
        public init(clinic: String, watch: String, provisionalRule: String?, displayUnit: DisplayUnit) {
            self.clinic = clinic
            self.watch = watch
            self.provisionalRule = provisionalRule
            self.displayUnit = displayUnit
        }
    }

    /// A count series that is one collection condition of a group, e.g. ("placement", "left", "speed_left").
    public struct Condition: Hashable, Sendable {
        /// The group, e.g. `placement`, `source`.
        public var group: String
        /// The condition's label within the group, e.g. `left`, `user-entered`.
        public var label: String
        /// The count series.
        public var series: String

        /// Creates a condition.
        public init(group: String, label: String, series: String) {
            self.group = group
            self.label = label
            self.series = series
        }
    }
}

/// A unit to display values in: `display = si × factor`.
public struct DisplayUnit: Hashable, Sendable {
    /// The symbol shown on axes and in tables, e.g. `m/s`, `mph`, `%`.
    public var symbol: String
    /// The factor from the SI value.
    public var factor: Double

    /// Creates a display unit.
    public init(symbol: String, factor: Double) {
        self.symbol = symbol
        self.factor = factor
    }
}
