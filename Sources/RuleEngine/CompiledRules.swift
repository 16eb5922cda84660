import RuleLanguage

/// The rules' expressions flattened into one array of nodes whose operands are node indices.
///
/// `Expr` is an indirect enum: every pattern match on it retains and releases the boxes of its
/// operands, atomically. Evaluating the default pack for a user's day close walks a few hundred
/// nodes, and that reference counting was over a quarter of a day close (`perf`, see
/// docs/benchmarks-history.md). A `Node` is trivially copyable: evaluating it touches no reference count.
struct CompiledRules: Sendable {
    /// A window's anchor; event kinds by index in `strings`.
    enum Anchor: Equatable, Sendable {
        case current
        case before(Int32)
        case after(Int32)
    }

    /// One expression node. Operands are indices in `nodes`; strings are indices in `strings`;
    /// `local` is a let's slot (``letBase`` of its alert plus its index).
    enum Node: Sendable {
        case number(Double)
        case bool(Bool)
        case string(Int32)
        case daily(Int32)
        case series(Int32)
        case local(Int32)
        case window(WindowFunction, Int32, days: Int32, minDays: Int32, anchor: Anchor)
        case excluding(Int32, annotation: Int32)
        case missingDays(Int32)
        case change(Int32, days: Int32)
        case shortfall(Int32, days: Int32, fit: Int32, minDays: Int32, fitMinDays: Int32, statistic: BreakStatistic)
        case daysSince(Int32)
        case annotated(Int32, days: Int32)
        case sample(SampleField)
        case metadata(Int32)
        case negate(Int32)
        case not(Int32)
        case abs(Int32)
        case startsWith(Int32, Int32)
        case binary(BinaryOp, Int32, Int32)
        case isKnown(Int32)
    }

    private(set) var nodes: [Node] = []
    /// String literals, event kinds and metadata keys.
    private(set) var strings: [String] = []
    /// The root of each series.
    private(set) var series: [Int32] = []
    /// Slot of each alert's first let; the last entry is the number of series plus lets (the
    /// evaluator's memo slots: series first, then lets).
    private(set) var letBase: [Int] = []
    /// The root of each let, by slot minus the number of series.
    private(set) var lets: [Int32] = []
    /// Whether each let (same index as `lets`) is boolean.
    private(set) var letIsBool: [Bool] = []
    /// Whether each let (same index as `lets`) is text (`let src = bundle_id`).
    private(set) var letIsString: [Bool] = []
    /// Each alert's condition, its sample filter and its monitoring window (`during`; -1: none).
    private(set) var conditions: [Int32] = []
    private(set) var filters: [Int32] = []
    private(set) var monitoring: [Int32] = []
    /// Each alert's text templates (``templateSlots``: the details, then the headline of each
    /// kind of transition): the root of each of the template's expressions, by index.
    private(set) var templates: [[[Int32]]] = []

    /// The templates of an alert in the order of ``templates``: its details, then its headline
    /// for each ``TransitionKind`` (the firing one's for a reminder without its own, a generic one
    /// for a kind without any).
    static func templateSlots(_ a: AlertRule) -> [Template] { [a.details] + TransitionKind.allCases.map { a.headline(for: $0) } }

    /// The slot of the headline of a kind of transition in ``templateSlots(_:)``.
    static func headlineSlot(_ kind: TransitionKind) -> Int { 1 + TransitionKind.allCases.firstIndex(of: kind)! }
    /// For each alert, how many days before the evaluated day its condition reads (through its
    /// lets and series; 0: only the evaluated day), and its `before:` windows (days, event kind).
    private(set) var decisionReach: [(days: Int, baselines: [(days: Int32, kind: Int32)])] = []

    init(_ p: Program) {
        var base = p.series.count
        for a in p.alerts {
            letBase.append(base)
            base += a.lets.count
        }
        letBase.append(base)
        series = p.series.map { add($0.expr, alert: -1) }
        for (j, a) in p.alerts.enumerated() {
            for b in a.lets {
                lets.append(add(b.expr, alert: j))
                letIsBool.append(b.type == .bool)
                letIsString.append(b.type == .string)
            }
            conditions.append(add(a.condition, alert: j))
            filters.append(a.filter.map { add($0, alert: j) } ?? -1)
            monitoring.append(a.monitoring.map { add($0, alert: j) } ?? -1)
            templates.append(CompiledRules.templateSlots(a).map { t in t.expressions.map { add($0, alert: j) } })
        }
        for c in conditions {
            var baselines: [(days: Int32, kind: Int32)] = []
            var memo: [Int32: Int] = [:]
            let days = reach(c, &baselines, &memo)
            decisionReach.append((days, baselines))
        }
    }

    /// How many days before the evaluated day node `n` reads (windows, `change`, `shortfall`;
    /// `missing_days` walks back without a fixed span and is not counted), collecting the
    /// `before:` windows it reads.
    private func reach(_ n: Int32, _ baselines: inout [(days: Int32, kind: Int32)], _ memo: inout [Int32: Int]) -> Int {
        if let r = memo[n] { return r }
        let r: Int
        switch nodes[Int(n)] {
        case .number, .bool, .string, .daily, .daysSince, .annotated, .sample, .metadata, .missingDays: r = 0
        case .series(let i): r = reach(series[Int(i)], &baselines, &memo)
        case .local(let slot): r = reach(lets[Int(slot) - series.count], &baselines, &memo)
        case .window(_, let x, let days, _, let anchor):
            switch anchor {
            case .current: r = Int(days) - 1 + reach(x, &baselines, &memo)
            case .before(let k):
                if !baselines.contains(where: { $0.days == days && $0.kind == k }) { baselines.append((days, k)) }
                r = 0
            case .after: r = 0
            }
        case .shortfall(let x, let days, let fit, _, _, _): r = Int(days + fit) - 1 + reach(x, &baselines, &memo)
        case .change(let x, let days): r = Int(days) + reach(x, &baselines, &memo)
        case .excluding(let x, _), .negate(let x), .not(let x), .abs(let x), .isKnown(let x): r = reach(x, &baselines, &memo)
        case .startsWith(let a, let b), .binary(_, let a, let b):
            r = max(reach(a, &baselines, &memo), reach(b, &baselines, &memo))
        }
        memo[n] = r
        return r
    }

    private mutating func string(_ s: String) -> Int32 {
        if let i = strings.firstIndex(of: s) { return Int32(i) }
        strings.append(s)
        return Int32(strings.count - 1)
    }

    /// Appends an expression's nodes (operands first); returns its root.
    private mutating func add(_ e: Expr, alert: Int) -> Int32 {
        let node: Node
        switch e {
        case .number(let v): node = .number(v)
        case .bool(let b): node = .bool(b)
        case .string(let s): node = .string(string(s))
        case .daily(let i): node = .daily(Int32(i))
        case .series(let i): node = .series(Int32(i))
        case .local(let i): node = .local(Int32(letBase[alert] + i))
        case .window(let f, let x, let days, let minDays, let anchor):
            let a: Anchor
            switch anchor {
            case .current: a = .current
            case .before(let k): a = .before(string(k))
            case .after(let k): a = .after(string(k))
            }
            node = .window(f, add(x, alert: alert), days: Int32(days), minDays: Int32(minDays), anchor: a)
        case .excluding(let x, let kind): node = .excluding(add(x, alert: alert), annotation: string(kind))
        case .missingDays(let x): node = .missingDays(add(x, alert: alert))
        case .change(let x, let days): node = .change(add(x, alert: alert), days: Int32(days))
        case .shortfall(let x, let days, let fit, let minDays, let fitMin, let statistic):
            node = .shortfall(
                add(x, alert: alert), days: Int32(days), fit: Int32(fit), minDays: Int32(minDays), fitMinDays: Int32(fitMin), statistic: statistic)
        case .daysSince(let k): node = .daysSince(string(k))
        case .annotated(let k, let days): node = .annotated(string(k), days: Int32(days))
        case .sample(let f): node = .sample(f)
        case .metadata(let k): node = .metadata(string(k))
        case .negate(let x): node = .negate(add(x, alert: alert))
        case .not(let x): node = .not(add(x, alert: alert))
        case .abs(let x): node = .abs(add(x, alert: alert))
        case .startsWith(let a, let b): node = .startsWith(add(a, alert: alert), add(b, alert: alert))
        case .binary(let op, let l, let r): node = .binary(op, add(l, alert: alert), add(r, alert: alert))
        case .isKnown(let x): node = .isKnown(add(x, alert: alert))
        }
        nodes.append(node)
        return Int32(nodes.count - 1)
    }

    /// Whether a node is boolean-valued.
    func isBoolean(_ n: Int32) -> Bool {
        switch nodes[Int(n)] {
        case .bool, .not, .isKnown, .annotated, .startsWith, .sample(.userEntered), .sample(.deviceRecorded), .sample(.calibrated): return true
        case .binary(let op, _, _):
            switch op {
            case .and, .or, .lt, .le, .gt, .ge, .eq, .ne: return true
            case .add, .sub, .mul, .div: return false
            }
        case .local(let slot): return letIsBool[Int(slot) - series.count]
        default: return false
        }
    }

    /// Whether a node is string-valued.
    func isString(_ n: Int32) -> Bool {
        switch nodes[Int(n)] {
        case .string, .sample(.bundleID): return true
        case .local(let slot): return letIsString[Int(slot) - series.count]
        default: return false
        }
    }
}
