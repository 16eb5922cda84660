/// What a checked program costs the engine: the evaluator's recursion depth and the values one
/// alert or series computes for one user's day close. Both are bounded (``RuleLimits``) so that no
/// rule file can overflow a stack or make a day close take minutes.
///
/// The cost model follows the evaluator (`RuleEngine/Evaluator.swift`): series and lets are
/// memoised per day within one evaluation, everything else is recomputed where it is used. A
/// window of N days evaluates its operand N times; a memoised series used by windows is computed
/// once per distinct day they reach. So `mean(x, 365 d)` over a series that is itself a 365-day
/// mean costs 365 × 365 and each further link of such a chain multiplies again — the shape the
/// bound exists for.
extension Checker {
    /// Checks every series and alert of the lowered program against the depth and cost limits.
    mutating func checkCost() {
        let series = program.series
        // Expanded depth: a series or let adds its own definition's depth where it is used.
        var seriesDepth = [Int](repeating: 0, count: series.count)
        var deepSeries = Set<Int>()
        for (i, s) in series.enumerated() {
            var usesDeep = false
            let d = Checker.depth(s.expr, series: seriesDepth, lets: [], deep: deepSeries, usesDeep: &usesDeep)
            seriesDepth[i] = d
            if d > RuleLimits.maxEvaluationDepth {
                deepSeries.insert(i)
                if !usesDeep { reportDepth("series '\(s.name)'", d, s.range) }
            }
        }
        var deepAlerts = Set<Int>()
        for (j, a) in program.alerts.enumerated() {
            var letDepth: [Int] = []
            var reported = false
            for b in a.lets {
                var usesDeep = false
                let d = Checker.depth(b.expr, series: seriesDepth, lets: letDepth, deep: deepSeries, usesDeep: &usesDeep)
                letDepth.append(d)
                if d > RuleLimits.maxEvaluationDepth, !usesDeep, !reported { reportDepth("'\(b.name)'", d, b.range); reported = true }
                if d > RuleLimits.maxEvaluationDepth { deepAlerts.insert(j) }
            }
            for e in [a.condition] + (a.filter.map { [$0] } ?? []) + (a.monitoring.map { [$0] } ?? [])
                + a.details.expressions + TransitionKind.allCases.flatMap({ a.headline(for: $0).expressions })
            {
                var usesDeep = false
                let d = Checker.depth(e, series: seriesDepth, lets: letDepth, deep: deepSeries, usesDeep: &usesDeep)
                if d > RuleLimits.maxEvaluationDepth {
                    deepAlerts.insert(j); if !usesDeep, !reported { reportDepth("alert '\(a.name)'", d, a.range); reported = true }
                }
            }
        }
        // Cost, for what is not already refused for its depth (the cost walk recurses as deep).
        var costly = Set<Int>()
        for (i, s) in series.enumerated() where !deepSeries.contains(i) {
            var walk = CostWalk(series: series, lets: [])
            walk.visit(s.expr, points: 1, reach: 0)
            let touched = walk.finish()
            guard walk.cost > Double(RuleLimits.maxCostPerDay) else { continue }
            if touched.isDisjoint(with: costly) { reportCost("series '\(s.name)'", walk, s.range) }
            costly.insert(i)
        }
        for (j, a) in program.alerts.enumerated() where !deepAlerts.contains(j) {
            var walk = CostWalk(series: series, lets: a.lets)
            walk.visitAlert(a)
            let touched = walk.finish()
            if walk.cost > Double(RuleLimits.maxCostPerDay), touched.isDisjoint(with: costly) { reportCost("alert '\(a.name)'", walk, a.range) }
        }
    }

    private mutating func reportDepth(_ what: String, _ d: Int, _ r: SourceRange) {
        error(.nestingTooDeepExpanded(what: what, depth: d, limit: RuleLimits.maxEvaluationDepth), r, notes: [Note(message: .eachDefinitionAddsDepth)])
    }

    private mutating func reportCost(_ what: String, _ walk: CostWalk, _ r: SourceRange) {
        var notes = [Note(message: .windowsMultiply)]
        if let (name, days) = walk.widest, days > 1 {
            notes.append(Note(message: .seriesNeededOnDays(name: name, days: days)))
        }
        error(.ruleTooCostly(what: what, cost: walk.cost, limit: RuleLimits.maxCostPerDay), r, notes: notes)
    }

    /// `1234567` as `1 234 567`, the way the docs write numbers.
    static func grouped(_ v: Double) -> String {
        guard v < 1e18 else { return "more than 10^18" }
        let digits = Array(String(Int64(v.rounded())))
        var out = ""
        for (k, c) in digits.enumerated() {
            if k > 0, (digits.count - k) % 3 == 0 { out.append(" ") }
            out.append(c)
        }
        return out
    }

    /// The evaluator's recursion depth for an expression; `usesDeep` when it uses a definition
    /// already too deep (reported there, not again here).
    static func depth(_ e: Expr, series: [Int], lets: [Int], deep: Set<Int>, usesDeep: inout Bool) -> Int {
        func sub(_ x: Expr) -> Int { depth(x, series: series, lets: lets, deep: deep, usesDeep: &usesDeep) }
        switch e {
        case .number, .bool, .string, .daily, .daysSince, .annotated, .sample, .metadata: return 1
        case .series(let i):
            if deep.contains(i) { usesDeep = true }
            return 1 + (i < series.count ? series[i] : 0)
        case .local(let i):
            if i < lets.count, lets[i] > RuleLimits.maxEvaluationDepth { usesDeep = true }
            return 1 + (i < lets.count ? lets[i] : 0)
        case .window(_, let x, _, _, _), .excluding(let x, _), .missingDays(let x), .change(let x, _), .negate(let x), .not(let x), .abs(let x),
            .isKnown(let x), .shortfall(let x, _, _, _, _, _):
            return 1 + sub(x)
        case .startsWith(let a, let b), .binary(_, let a, let b):
            return 1 + max(sub(a), sub(b))
        }
    }
}

/// One cost walk: the values an evaluation computes, with series and lets memoised per day.
struct CostWalk {
    let series: [SeriesRule]
    let lets: [Binding]
    /// Values computed so far (a Double: nested windows multiply past Int's range).
    var cost = 0.0
    /// For each memoised series and let, how many days back from the evaluated day it is needed.
    var seriesReach: [Int: Int] = [:]
    var letReach: [Int: Int] = [:]
    /// The series needed on the most days, and that number.
    var widest: (String, Int)?

    init(series: [SeriesRule], lets: [Binding]) {
        self.series = series
        self.lets = lets
    }

    /// The days an evaluation can reach back are capped: no window or loop reaches further than
    /// 3650 days, and a cap keeps the sums finite.
    static let maxReach = 1 << 24

    /// `points`: how many times `e` is evaluated for one evaluated day; `reach`: how many days
    /// before the evaluated day those evaluations reach.
    mutating func visit(_ e: Expr, points: Double, reach: Int) {
        cost += points
        switch e {
        case .number, .bool, .string, .daily, .daysSince, .annotated, .sample, .metadata: break
        case .series(let i): seriesReach[i] = max(seriesReach[i] ?? 0, reach)
        case .local(let i): letReach[i] = max(letReach[i] ?? 0, reach)
        case .window(_, let x, let days, _, _):
            visit(x, points: points * Double(days), reach: min(reach + days - 1, CostWalk.maxReach))
        case .missingDays(let x):
            // Walks back day by day until a value is known: up to 3650 days.
            visit(x, points: points * 3650, reach: min(reach + 3650, CostWalk.maxReach))
        case .change(let x, let days):
            visit(x, points: points * 2, reach: min(reach + days, CostWalk.maxReach))
        case .shortfall(let x, let days, let fit, _, _, _):
            visit(x, points: points * Double(days + fit), reach: min(reach + days + fit - 1, CostWalk.maxReach))
        case .negate(let x), .not(let x), .abs(let x), .isKnown(let x), .excluding(let x, _):
            visit(x, points: points, reach: reach)
        case .startsWith(let a, let b), .binary(_, let a, let b):
            visit(a, points: points, reach: reach)
            visit(b, points: points, reach: reach)
        }
    }

    /// Visits what one evaluation of an alert computes: its lets (shown as evidence), condition,
    /// sample filter, monitoring window and the values of its headlines and details.
    mutating func visitAlert(_ a: AlertRule) {
        for k in a.lets.indices { letReach[k] = letReach[k] ?? 0 }  // memoised: computed in finish()
        visit(a.condition, points: 1, reach: 0)
        if let f = a.filter { visit(f, points: 1, reach: 0) }
        if let m = a.monitoring { visit(m, points: 1, reach: 0) }
        for e in a.details.expressions + TransitionKind.allCases.flatMap({ a.headline(for: $0).expressions }) { visit(e, points: 1, reach: 0) }
    }

    /// Adds the memoised definitions, each computed once per day it is needed on (lets use only
    /// earlier lets and series, series only earlier series: one pass from the last down).
    /// Returns the series the walk touched.
    mutating func finish() -> Set<Int> {
        for k in lets.indices.reversed() {
            guard let r = letReach[k] else { continue }
            visit(lets[k].expr, points: Double(r + 1), reach: r)
        }
        for i in series.indices.reversed() {
            guard let r = seriesReach[i] else { continue }
            if widest == nil || r + 1 > widest!.1 { widest = (series[i].name, r + 1) }
            visit(series[i].expr, points: Double(r + 1), reach: r)
        }
        return Set(seriesReach.keys)
    }
}
