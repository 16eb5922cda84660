import MobilityModel

/// A checked `report { … }` block: which recorded series feed a user's weekly care-team report,
/// in which units, and which rules explain the week in words. At most one per rule set.
package struct ReportDeclaration: Hashable, Sendable {
    /// The walking-speed panel (`walking_speed { … }`), if declared.
    package var speed: TrendPanel?
    /// The double-support panel (`double_support { … }`; lower is better), if declared.
    package var doubleSupport: TrendPanel?
    /// The six-minute-walk panel (`six_minute_walk { … }`), if declared.
    package var sixMinuteWalk: SixMinuteWalkPanel?
    /// `condition GROUP LABEL = SERIES` lines, in source order.
    package var conditions: [Condition]
    /// `explain RULE, …`: rules whose summaries the report quotes.
    package var explanations: [String]

    package init(
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
    package struct TrendPanel: Hashable, Sendable {
        /// `title "…"`, if given.
        package var title: String?
        /// `daily SERIES`.
        package var daily: String
        /// `smoothed SERIES`.
        package var smoothed: String?
        /// `baseline N d`: days before the clinical event.
        package var baselineDays: Int?
        /// `baseline N d before KIND`: the event kind; nil means the latest clinical event of any kind.
        package var baselineEvent: String?
        /// `unit U`, else the daily series' own unit.
        package var unit: MeasureUnit

        package init(title: String?, daily: String, smoothed: String?, baselineDays: Int?, baselineEvent: String?, unit: MeasureUnit) {
            self.title = title
            self.daily = daily
            self.smoothed = smoothed
            self.baselineDays = baselineDays
            self.baselineEvent = baselineEvent
            self.unit = unit
        }
    }

    /// Clinic tests against watch estimates.
    package struct SixMinuteWalkPanel: Hashable, Sendable {
        /// `title "…"`, if given.
        package var title: String?
        /// `clinic SERIES`.
        package var clinic: String
        /// `watch SERIES`.
        package var watch: String
        /// `provisional RULE`: while it is active a watch estimate is provisional.
        package var provisionalRule: String?
        /// `unit U`, else the clinic series' own unit.
        package var unit: MeasureUnit

        package init(title: String?, clinic: String, watch: String, provisionalRule: String?, unit: MeasureUnit) {
            self.title = title
            self.clinic = clinic
            self.watch = watch
            self.provisionalRule = provisionalRule
            self.unit = unit
        }
    }

    /// A count series that is one condition of a group.
    package struct Condition: Hashable, Sendable {
        /// The group, e.g. `source`.
        package var group: String
        /// The label within it, e.g. `device`.
        package var label: String
        /// The count series.
        package var series: String

        package init(group: String, label: String, series: String) {
            self.group = group
            self.label = label
            self.series = series
        }
    }
}
