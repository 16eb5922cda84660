import MobilityModel

/// How a day's sample values are reduced to one number.
package enum Aggregation: Hashable, Sendable, CustomStringConvertible {
    /// A percentile 0–100 with its method.
    case percentile(Double, PercentileMethod)
    case mean, median, min, max, sum, count
    /// The value of the latest sample of the day (by end time).
    case last

    /// The aggregation as written in rules: `mean`, `p90`, `p90/nearest`, `last`, ….
    package var description: String {
        switch self {
        case .percentile(let q, let m): "p\(JSONWriter.format(q))\(m == .nearestRank ? "/nearest" : "")"
        case .mean: "mean"
        case .median: "median"
        case .min: "min"
        case .max: "max"
        case .sum: "sum"
        case .count: "count"
        case .last: "last"
        }
    }
}

/// How a percentile is computed.
package enum PercentileMethod: Hashable, Sendable {
    /// Linear interpolation between closest ranks (R-7, numpy's default).
    case linear
    /// The smallest value with at least q% of values at or below it.
    case nearestRank
}

/// A daily input: one metric, optionally one provenance, one aggregation. The engine computes
/// each once per user and day.
package struct DailyInput: Hashable, Sendable {
    /// The metric whose samples are aggregated.
    package var metric: MetricKind
    /// Restrict to one provenance; nil means all samples.
    package var provenance: Provenance?
    /// How the day's values are reduced to one number.
    package var aggregation: Aggregation

    package init(metric: MetricKind, provenance: Provenance?, aggregation: Aggregation) {
        self.metric = metric
        self.provenance = provenance
        self.aggregation = aggregation
    }
}

/// Where a window sits in time.
package enum WindowAnchor: Hashable, Sendable {
    /// The N days ending on the evaluated day, cut at the segment start.
    case current
    /// The N days ending the day before the latest event of a kind (e.g. a pre-injury baseline).
    case before(String)
    /// The N days starting on the latest event of a kind, up to the evaluated day.
    case after(String)
}

/// A reduction over a window of days.
package enum WindowFunction: String, Hashable, Sendable {
    case mean, median, min, max, sum, last, slope
    case daysWithData = "days_with_data"
    /// The one-sided 95 % lower confidence bound of the least-squares slope (Student t, n − 2 df).
    case slopeLower = "slope_lower"
    /// The one-sided 95 % upper confidence bound of the least-squares slope.
    case slopeUpper = "slope_upper"
    /// The standard error of the least-squares slope, from the residuals about the fitted line.
    case slopeError = "slope_error"
    /// The sample standard deviation (n − 1) of the days with a value.
    case stddev

    /// The fewest days with a value the function needs: 3 for the slope's uncertainty (one
    /// residual degree of freedom), 2 for a slope or a standard deviation, else 1.
    package var minimumDays: Int {
        switch self {
        case .slopeLower, .slopeUpper, .slopeError: 3
        case .slope, .stddev: 2
        default: 1
        }
    }
}

/// A per-sample field, for rules triggered `on sample`.
package enum SampleField: String, Hashable, Sendable, CaseIterable {
    case value
    case userEntered = "user_entered"
    case deviceRecorded = "device_recorded"
    case calibrated
    case bundleID = "bundle_id"
}

/// Binary operators.
package enum BinaryOp: String, Hashable, Sendable {
    case add = "+", sub = "-", mul = "*", div = "/"
    case lt = "<", le = "<=", gt = ">", ge = ">=", eq = "==", ne = "!="
    case and, or
}

/// A checked expression. Numbers are in SI; an unknown value (insufficient data) propagates.
package indirect enum Expr: Hashable, Sendable {
    case number(Double)
    case bool(Bool)
    case string(String)
    /// The value of daily input `index` on the evaluated day.
    case daily(Int)
    /// A top-level series, by index.
    case series(Int)
    /// An alert-local `let`, by index.
    case local(Int)
    case window(WindowFunction, Expr, days: Int, minDays: Int, anchor: WindowAnchor)
    /// The operand, unknown on the days an annotation of a kind covers (a window's `excluding:`).
    case excluding(Expr, annotation: String)
    /// Consecutive days without a value ending on the evaluated day (since the user's first data).
    case missingDays(Expr)
    /// Value today minus value N days ago (same segment).
    case change(Expr, days: Int)
    /// The last `days` days against the least-squares line fitted to the `fit` days before them
    /// (same segment), extrapolated: how far their mean fell below it, or the change of slope
    /// since the break, as a value or in standard errors (`statistic`: `shortfall`,
    /// `shortfall_z`, `slope_change`, `slope_change_z`). `minDays` and `fitMinDays`: the coverage
    /// each part needs.
    case shortfall(Expr, days: Int, fit: Int, minDays: Int, fitMinDays: Int, statistic: BreakStatistic)
    /// Days since the latest event of a kind, as a duration.
    case daysSince(String)
    /// Whether an annotation of a kind overlaps the last N days.
    case annotated(String, days: Int)
    case sample(SampleField)
    case metadata(String)
    case negate(Expr)
    case not(Expr)
    case abs(Expr)
    case startsWith(Expr, Expr)
    case binary(BinaryOp, Expr, Expr)
    /// True when the operand is known (has enough data).
    case isKnown(Expr)
}

/// The static type of an expression.
package enum ValueType: Hashable, Sendable, CustomStringConvertible {
    case number(PhysicalDimension)
    case bool
    case string

    /// The type's name in diagnostics: the dimension's name, `boolean` or `string`.
    package var description: String {
        switch self {
        case .number(let d): d.description
        case .bool: "boolean"
        case .string: "string"
        }
    }
}

/// A named value with its type and the unit it is shown in.
package struct Binding: Hashable, Sendable {
    /// The name rules refer to it by.
    package var name: String
    /// The checked expression computing its value (in SI).
    package var expr: Expr
    /// The expression's static type.
    package var type: ValueType
    /// The unit used for evidence and series payloads.
    package var displayUnit: MeasureUnit
    /// Where it was defined.
    package var range: SourceRange
}

/// A recording rule: a named daily series published for dashboards.
package typealias SeriesRule = Binding

/// When an alert is evaluated.
package enum Trigger: Hashable, Sendable {
    /// Once per user and local day, when the day closes.
    case day
    /// On every sample of a metric, as it arrives.
    case sample(MetricKind)

    /// Whether this is a per-sample trigger for a metric.
    package func matches(_ m: MetricKind) -> Bool { self == .sample(m) }
}

/// A checked alerting rule.
package struct AlertRule: Hashable, Sendable {
    /// The alert's name; on reload a rule that kept its name keeps its users' alert state.
    package var name: String
    /// When the alert is evaluated: once a day or on each sample of a metric.
    package var trigger: Trigger
    /// For `on sample M where …`: samples failing the filter are ignored by this rule.
    package var filter: Expr?
    /// The alert-local `let` bindings in definition order, referred to by `Expr.local(index)`.
    package var lets: [Binding]
    /// The boolean condition; when it is unknown (insufficient data), a pending alert resets and a firing one holds.
    package var condition: Expr
    /// The monitoring window (`during`): a boolean; while it is not true the rule watches
    /// nothing, and a firing instance expires when it closes. nil: always monitored.
    package var monitoring: Expr?
    /// How long the condition must hold before firing (seconds of event time).
    package var forSeconds: Int64
    /// How long to keep firing after the condition clears.
    package var keepFiringForSeconds: Int64
    /// Re-publish a firing alert this often (0: never).
    package var repeatSeconds: Int64
    /// After resolving, do not fire again for this long (0: no cooldown).
    package var cooldownSeconds: Int64
    /// The severity published with the alert.
    package var severity: Severity
    /// Sorted by key.
    package var labels: [(String, String)]
    /// The one-line headline of each kind of transition (`headline`, `headline resolved`, …),
    /// rendered into every published transition; a kind without one is rendered from its
    /// fallback (``headline(for:)``).
    package var headlines: [TransitionKind: Template]
    /// The details template (`details`, formerly `summary`): the statistics behind the headline.
    package var details: Template
    /// Indices of alerts whose firing suppresses this one for the same user.
    package var inhibitedBy: [Int]
    /// Where the alert is defined in its rule file.
    package var range: SourceRange

    /// The headline template of a kind of transition: the rule's own, a reminder's the firing
    /// one's, else the generic one (``TemplateText/defaultHeadline(rule:kind:)``).
    package func headline(for kind: TransitionKind) -> Template {
        if let t = headlines[kind] { return t }
        if kind == .repeat, let t = headlines[.firing] { return t }
        return TemplateText.defaultHeadline(rule: name, kind: kind)
    }

    /// Equal when everything but the source range is equal (a moved but unchanged rule is the same rule).
    package static func == (a: AlertRule, b: AlertRule) -> Bool {
        a.name == b.name && a.trigger == b.trigger && a.filter == b.filter && a.lets == b.lets && a.condition == b.condition && a.monitoring == b.monitoring
            && a.forSeconds == b.forSeconds
            && a.keepFiringForSeconds == b.keepFiringForSeconds && a.repeatSeconds == b.repeatSeconds && a.cooldownSeconds == b.cooldownSeconds
            && a.severity == b.severity && a.labels.map(\.0) == b.labels.map(\.0) && a.labels.map(\.1) == b.labels.map(\.1)
            && a.headlines == b.headlines && a.details == b.details && a.inhibitedBy == b.inhibitedBy
    }

    /// Hashes the name and condition only (consistent with `==`).
    package func hash(into h: inout Hasher) { h.combine(name); h.combine(condition) }
}

/// A checked rule set: everything the engine needs.
package struct Program: Sendable {
    /// The source files, for rendering diagnostics and identities.
    package var files: [SourceFile]
    /// Daily inputs referenced by any rule.
    package var inputs: [DailyInput]
    /// Recording rules, each after the series it uses.
    package var series: [SeriesRule]
    /// Alerts, each after the alerts that inhibit it.
    package var alerts: [AlertRule]
    /// Clinical event kinds (hard boundaries).
    package var clinicalKinds: Set<String>
    /// Annotation kinds.
    package var annotationKinds: Set<String>
    /// The furthest back, in days, any rule looks from the evaluated day (anchored windows excluded).
    package var lookbackDays: Int
    /// The longest window anchored on a clinical event (`before:`/`after:`), in days.
    package var anchoredWindowDays: Int
    /// The `report` block, if the rule set declares one.
    package var report: ReportDeclaration?

    /// An empty program.
    package init() {
        files = []
        inputs = []
        series = []
        alerts = []
        clinicalKinds = TimelineEvent.clinicalKinds
        annotationKinds = TimelineEvent.annotationKinds
        lookbackDays = 0
        anchoredWindowDays = 0
    }

    /// The alert with a name.
    package func alert(named n: String) -> Int? { alerts.firstIndex { $0.name == n } }

    /// A short identity of the rule sources (FNV-1a 64 of paths and texts), for state and logs.
    package var identity: String {
        var h = FNV1a64()
        for f in files.sorted(by: { $0.path < $1.path }) {
            h.combine(bytes: f.bytes)
            h.combine(0)
        }
        return String(h.value, radix: 16)
    }
}
