import MobilityModel

/// A checked `report { … }` block: which recorded series feed a user's weekly care-team report,
/// in which units, and which rules explain the week in words. At most one per rule set.
public struct ReportDeclaration: Hashable, Sendable {
    /// The walking-speed panel (`walking_speed { … }`), if declared.
    public var speed: TrendPanel?
    /// The double-support panel (`double_support { … }`; lower is better), if declared.
    public var doubleSupport: TrendPanel?
    /// The six-minute-walk panel (`six_minute_walk { … }`), if declared.
    public var sixMinuteWalk: SixMinuteWalkPanel?
    /// `condition GROUP LABEL = SERIES` lines, in source order.
    public var conditions: [Condition]
    /// `explain RULE, …`: rules whose summaries the report quotes.
    public var explanations: [String]

    /// Creates a declaration.
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

    /// A daily series with its smoothed series and pre-injury baseline.
    public struct TrendPanel: Hashable, Sendable {
        /// `title "…"`, if given.
        public var title: String?
        /// `daily SERIES`.
        public var daily: String
        /// `smoothed SERIES`.
        public var smoothed: String?
        /// `baseline N d`: days before the clinical event.
        public var baselineDays: Int?
        /// `baseline N d before KIND`: the event kind; nil means the latest clinical event of any kind.
        public var baselineEvent: String?
        /// `unit U`, else the daily series' own unit.
        public var unit: MeasureUnit

        /// Creates a panel.
        public init(title: String?, daily: String, smoothed: String?, baselineDays: Int?, baselineEvent: String?, unit: MeasureUnit) {
            self.title = title
            self.daily = daily
            self.smoothed = smoothed
            self.baselineDays = baselineDays
            self.baselineEvent = baselineEvent
            self.unit = unit
        }
    }

    /// Clinic tests against watch estimates.
    public struct SixMinuteWalkPanel: Hashable, Sendable {
        /// `title "…"`, if given.
        public var title: String?
        /// `clinic SERIES`.
        public var clinic: String
        /// `watch SERIES`.
        public var watch: String
        /// `provisional RULE`: while it is active a watch estimate is provisional.
        public var provisionalRule: String?
        /// `unit U`, else the clinic series' own unit.
        public var unit: MeasureUnit

        /// Creates a panel.
        public init(title: String?, clinic: String, watch: String, provisionalRule: String?, unit: MeasureUnit) {
            self.title = title
            self.clinic = clinic
            self.watch = watch
            self.provisionalRule = provisionalRule
            self.unit = unit
        }
    }

    /// A count series that is one condition of a group.
    public struct Condition: Hashable, Sendable {
        /// The group, e.g. `source`.
        public var group: String
        /// The label within it, e.g. `device`.
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
