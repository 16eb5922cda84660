import MobilityModel
import RuleLanguage

extension ReportSpec {
    /// The spec a rule set's checked `report` block declares.
    package init(_ d: ReportDeclaration) {
        func trend(_ p: ReportDeclaration.TrendPanel?, _ title: String, lowerIsBetter: Bool) -> TrendPanel? {
            p.map {
                TrendPanel(
                    title: $0.title ?? title, daily: $0.daily, smoothed: $0.smoothed, baselineDays: $0.baselineDays,
                    displayUnit: DisplayUnit($0.unit), lowerIsBetter: lowerIsBetter, baselineEvent: $0.baselineEvent)
            }
        }
        self.init(
            speed: trend(d.speed, "Walking speed", lowerIsBetter: false),
            doubleSupport: trend(d.doubleSupport, "Double support", lowerIsBetter: true),
            sixMinuteWalk: d.sixMinuteWalk.map {
                SixMinuteWalkPanel(clinic: $0.clinic, watch: $0.watch, provisionalRule: $0.provisionalRule, displayUnit: DisplayUnit($0.unit))
            },
            conditions: d.conditions.map { Condition(group: $0.group, label: $0.label, series: $0.series) },
            explanations: d.explanations)
    }
}

extension DisplayUnit {
    /// The display unit of a rule-language unit (`mph`: factor 1 / 0.44704).
    package init(_ u: MeasureUnit) { self.init(symbol: u.symbol, factor: 1 / u.toSI) }
}
