/// Which recorded series feed a user's report, as a rule file's `report` block declares them: the
/// report is data, like the rules, not hard-coded in Swift.
package struct ReportSpec: Hashable, Sendable {
    /// The walking-speed panel (recovery panel), if declared.
    package var speed: TrendPanel?
    /// The double-support panel (gait-quality card), if declared.
    package var doubleSupport: TrendPanel?
    /// The six-minute-walk panel (clinic vs watch), if declared.
    package var sixMinuteWalk: SixMinuteWalkPanel?
    /// Series counting samples by collection condition (e.g. placement side, user-entered), shown
    /// as shares of their group: `(group, label, series)`.
    package var conditions: [Condition]
    /// Rules whose firing says something in words about the week (e.g. the gait-quality
    /// explanation); their summaries are quoted in the report.
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

    /// A daily series with its smoothed trend and pre-injury baseline.
    package struct TrendPanel: Hashable, Sendable {
        /// Its title, e.g. "Walking speed".
        package var title: String
        /// The daily series (e.g. `speed_p95`), drawn as points.
        package var daily: String
        /// The smoothed series (e.g. `speed_7d`), drawn as a line broken at clinical events.
        package var smoothed: String?
        /// The baseline: the mean of `daily` over this many days before the latest clinical event.
        package var baselineDays: Int?
        /// The kind of that clinical event (`injury`); nil: the latest clinical event of any kind.
        package var baselineEvent: String?
        /// The display unit (e.g. `mph`), converted from the series' SI unit.
        package var displayUnit: DisplayUnit
        /// True when a lower value is better (double support).
        package var lowerIsBetter: Bool

        package init(
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
    package struct SixMinuteWalkPanel: Hashable, Sendable {
        /// The clinic (user-entered / non-Apple) series, drawn red.
        package var clinic: String
        /// The watch series, drawn green.
        package var watch: String
        /// The rule whose active episodes mark a watch estimate provisional (hollow).
        package var provisionalRule: String?
        /// The display unit.
        package var displayUnit: DisplayUnit

        package init(clinic: String, watch: String, provisionalRule: String?, displayUnit: DisplayUnit) {
            self.clinic = clinic
            self.watch = watch
            self.provisionalRule = provisionalRule
            self.displayUnit = displayUnit
        }
    }

    /// A count series that is one collection condition of a group, e.g. ("placement", "left", "speed_left").
    package struct Condition: Hashable, Sendable {
        /// The group, e.g. `placement`, `source`.
        package var group: String
        /// The condition's label within the group, e.g. `left`, `user-entered`.
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

/// A unit to display values in: `display = si × factor`.
package struct DisplayUnit: Hashable, Sendable {
    /// The symbol shown on axes and in tables, e.g. `m/s`, `mph`, `%`.
    package var symbol: String
    /// The factor from the SI value.
    package var factor: Double

    package init(symbol: String, factor: Double) {
        self.symbol = symbol
        self.factor = factor
    }
}
