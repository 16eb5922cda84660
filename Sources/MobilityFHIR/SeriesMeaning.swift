import MobilityModel
import RuleLanguage

/// What a recorded series measures, read from its rule: the metric its values are a statistic of
/// (nil for counts, sums, slopes and other derived values) and the days a value covers.
package struct SeriesMeaning: Hashable, Sendable {
    /// The HealthKit metric whose values the series summarises in the metric's own dimension
    /// (`p95(walkingSpeed)`, a 7-day mean of it); nil when the value is not such a summary.
    package var metric: MetricKind?
    /// The local days one value covers, ending on its day (1 for a daily aggregate, 7 for a
    /// 7-day mean of one).
    package var days: Int
    /// How the value is computed, in words (`mean over 7 d of p95 of walkingSpeed (device) per local day`).
    package var method: String

    package init(metric: MetricKind?, days: Int, method: String) {
        self.metric = metric
        self.days = days
        self.method = method
    }

    /// The meanings of a program's series, by name.
    package static func of(_ program: Program) -> [String: SeriesMeaning] {
        var out: [String: SeriesMeaning] = [:]
        for s in program.series { out[s.name] = meaning(s, program, depth: 0) }
        return out
    }

    private static func meaning(_ s: SeriesRule, _ p: Program, depth: Int) -> SeriesMeaning {
        var m = meaning(s.expr, p, depth: depth)
        // Only a value in the metric's own dimension is a measurement of it (a count of samples is not).
        if let k = m.metric, s.type != .number(k.dimension) { m.metric = nil }
        return m
    }

    private static func meaning(_ e: Expr, _ p: Program, depth: Int) -> SeriesMeaning {
        guard depth < 16 else { return SeriesMeaning(metric: nil, days: 1, method: "computed by its rule") }
        switch e {
        case .daily(let i) where p.inputs.indices.contains(i):
            let input = p.inputs[i]
            let source = input.provenance.map { " (\($0))" } ?? ""
            let text = "\(input.aggregation) of \(input.metric.name)\(source) per local day"
            switch input.aggregation {
            case .count, .sum: return SeriesMeaning(metric: nil, days: 1, method: text)
            default: return SeriesMeaning(metric: input.metric, days: 1, method: text)
            }
        case .series(let j) where p.series.indices.contains(j):
            return meaning(p.series[j], p, depth: depth + 1)
        case .window(let f, let inner, let days, _, .current):
            let m = meaning(inner, p, depth: depth + 1)
            let text = "\(f.rawValue) over \(days) d of \(m.method)"
            switch f {
            case .mean, .median, .min, .max, .last: return SeriesMeaning(metric: m.metric, days: days + m.days - 1, method: text)
            default: return SeriesMeaning(metric: nil, days: days + m.days - 1, method: text)
            }
        default:
            return SeriesMeaning(metric: nil, days: 1, method: "computed by its rule")
        }
    }
}
