import MobilityModel
import RuleLanguage

/// Evaluates checked expressions for one user, with memoisation of series and lets per day.
///
/// Numbers are SI; nil means unknown. Booleans follow Kleene's three-valued logic: `false and
/// unknown` is false, `true or unknown` is true, everything else with an unknown is unknown.
struct Evaluator {
    /// The rules, by reference: making an evaluator copies no `Program` (one retain, not one per array).
    let rules: DayCloser
    @inline(__always) var program: Program { _read { yield rules.program } }
    /// The rules' expressions as nodes (`rules.code`, held here so that reading a node is one
    /// array access).
    let code: CompiledRules
    var user: UserState
    /// The sample being evaluated, for `on sample` rules.
    var sample: Sample?
    /// The alert whose lets are in scope.
    var alert: Int = -1
    /// How many users' state machines are firing, per alert (kept by ``Engine/step``, which is
    /// where state machines change; the engine recounts it from the states on reload).
    var firing: [Int]
    /// Memo of series and lets for the `span` days ending on `memoTop`: a flat array indexed by
    /// (slot, days back), `notComputed` when empty, NaN for unknown. Other days use `far`.
    var near: [Double] = []
    private var far: [Int64: Double?] = [:]
    private var memoTop: DayNumber = .min
    private static let span = 32

    /// An evaluator for a set of rules, holding an empty placeholder state: a user's state is
    /// swapped in for a day close or a sample (``DayCloser/advance``), and out again. One lives
    /// as long as the engine's rules, so that no evaluator (its memo, its let table) is built and
    /// destroyed per user.
    init(rules: DayCloser) {
        self.rules = rules
        self.code = rules.code
        self.user = UserState(user: "", calendar: .utc)
        self.firing = Array(repeating: 0, count: rules.program.alerts.count)
    }

    /// Forgets what belonged to the previous user: the memo, the sample, the alert in scope.
    mutating func begin() {
        memoTop = .min
        if !far.isEmpty { far.removeAll(keepingCapacity: true) }
        sample = nil
        alert = -1
    }

    private static func key(_ kind: Int64, _ index: Int, _ day: DayNumber) -> Int64 {
        (kind << 56) | (Int64(index & 0xFF_FFFF) << 32) | Int64(UInt32(bitPattern: day))
    }

    /// Starts a new evaluated day (memoised values of other days may depend on data that changed).
    mutating func resetMemo(day: DayNumber) {
        memoTop = .min
        _ = nearIndex(0, day)  // allocates or clears the near memo, anchored on `day`
        if !far.isEmpty { far.removeAll(keepingCapacity: true) }
    }

    /// The near-memo index of (slot, day), or nil when the day is outside the span.
    @inline(__always) private mutating func nearIndex(_ slot: Int, _ d: DayNumber) -> Int? {
        if memoTop == .min {
            let size = code.letBase.last! * Evaluator.span
            if near.count != size {
                near = Array(repeating: UserState.notComputed, count: size)
            } else {
                for k in near.indices { near[k] = UserState.notComputed }
            }
            memoTop = d
        }
        let back = Int(memoTop) - Int(d)
        guard back >= 0, back < Evaluator.span else { return nil }
        return slot * Evaluator.span + back
    }

    /// What the memo holds for a value: nothing yet, or the value computed (nil: unknown).
    private enum Memo {
        case notComputed
        case known(Double?)
    }

    /// A memoised value.
    @inline(__always) private mutating func recall(_ kind: Int64, _ slot: Int, _ d: DayNumber) -> Memo {
        if let i = nearIndex(slot, d) {
            let v = near[i]
            if v.bitPattern == UserState.notComputed.bitPattern { return .notComputed }
            return .known(v.isNaN ? nil : v)
        }
        guard let v = far[Evaluator.key(kind, slot, d)] else { return .notComputed }
        return .known(v)
    }

    @inline(__always) private mutating func remember(_ kind: Int64, _ slot: Int, _ d: DayNumber, _ v: Double?) {
        if let i = nearIndex(slot, d) { near[i] = v ?? .nan } else { far[Evaluator.key(kind, slot, d)] = v }
    }

    // MARK: Daily inputs

    mutating func daily(_ i: Int, _ d: DayNumber) -> Double? {
        if let o = user.openIndex(d) {
            if user.inputCache.isEmpty {
                user.cacheWidth = program.inputs.count
                user.inputCache = Array(repeating: UserState.notComputed, count: user.openDays.count * user.cacheWidth)
            }
            let c = user.inputCache[o * user.cacheWidth + i]
            if c.bitPattern != UserState.notComputed.bitPattern { return c.isNaN ? nil : c }
            let r = Evaluator.reduce(program.inputs[i], user.openValues[user.openDays[o].range])
            user.inputCache[o * user.cacheWidth + i] = r ?? .nan
            return r
        }
        return user.foldedValue(i, d)
    }

    /// A daily input of one day's raw values (all metrics of the day).
    static func reduce(_ input: DailyInput, _ all: ArraySlice<StoredValue>) -> Double? {
        switch input.aggregation {
        case .percentile, .median:
            var values: [Double] = []
            for v in all where v.matches(input.metric, input.provenance) { values.append(v.value) }
            if case .percentile(let q, let m) = input.aggregation { return Aggregate.percentile(&values, q, m) }
            return Aggregate.median(&values)
        default:
            // One pass, no array: n, sum, min, max, and the latest by (end, id).
            var n = 0, sum = 0.0, lo = Double.infinity, hi = -Double.infinity
            var latest: StoredValue?
            for v in all where v.matches(input.metric, input.provenance) {
                n += 1
                sum += v.value
                lo = Swift.min(lo, v.value)
                hi = Swift.max(hi, v.value)
                if latest == nil || (v.end, v.id) > (latest!.end, latest!.id) { latest = v }
            }
            guard n > 0 else { return nil }
            switch input.aggregation {
            case .mean: return sum / Double(n)
            case .min: return lo
            case .max: return hi
            case .sum: return sum
            case .count: return Double(n)
            default: return latest?.value
            }
        }
    }

    // MARK: Numbers

    /// The value of series `i` on day `d` (memoised).
    mutating func series(_ i: Int, _ d: DayNumber) -> Double? {
        if case .known(let hit) = recall(1, i, d) { return hit }
        let v = number(code.series[i], d)
        remember(1, i, d, v)
        return v
    }

    /// The value of a numeric let (by slot: its alert's `letBase` plus its index) on day `d` (memoised).
    mutating func local(_ slot: Int, _ d: DayNumber) -> Double? {
        _ = nearIndex(0, d)
        if case .known(let hit) = recall(2, slot, d) { return hit }
        let v = number(code.lets[slot - code.series.count], d)
        remember(2, slot, d, v)
        return v
    }

    /// The value of a boolean let (by slot) on day `d` (memoised).
    mutating func localBoolean(_ slot: Int, _ d: DayNumber) -> Bool? {
        _ = nearIndex(0, d)
        if case .known(let hit) = recall(3, slot, d) { return hit.map { $0 != 0 } }
        let v = boolean(code.lets[slot - code.series.count], d)
        remember(3, slot, d, v.map { $0 ? 1 : 0 })
        return v
    }

    /// The value of a text let (by slot) on day `d`. Not memoised: a text value is a sample field
    /// or a literal, cheaper to read again than to store.
    mutating func localString(_ slot: Int, _ d: DayNumber) -> String? { string(code.lets[slot - code.series.count], d) }

    /// Whether a node is text-valued.
    func isText(_ n: Int32) -> Bool { code.isString(n) }

    /// The slot of let `i` of the alert in scope.
    func letSlot(_ i: Int) -> Int { code.letBase[alert] + i }

    /// An alert's condition (`alert` set) on day `d`.
    mutating func condition(_ j: Int, _ d: DayNumber) -> Bool? { boolean(code.conditions[j], d) }

    /// Whether an alert's condition (`alert` set) is true on day `d`: its `and`, `or` and `not`
    /// read only the operands that can still make it true (an unknown first clause of an `and`
    /// settles it, where the three-valued value would read the second to tell false from
    /// unknown).
    mutating func conditionHolds(_ j: Int, _ d: DayNumber) -> Bool { holds(code.conditions[j], d, true) }

    /// Whether boolean node `n` is `want` on day `d` (unknown is neither).
    mutating func holds(_ n: Int32, _ d: DayNumber, _ want: Bool) -> Bool {
        switch code.nodes[Int(n)] {
        case .not(let x): return holds(x, d, !want)
        case .binary(.and, let l, let r):
            return want ? holds(l, d, true) && holds(r, d, true) : holds(l, d, false) || holds(r, d, false)
        case .binary(.or, let l, let r):
            return want ? holds(l, d, true) || holds(r, d, true) : holds(l, d, false) && holds(r, d, false)
        default: return boolean(n, d) == want
        }
    }

    /// Whether day `d` is inside an alert's monitoring window (`during` true; always when it has
    /// none). Unknown is outside: a window that cannot be placed watches nothing.
    mutating func monitored(_ j: Int, _ d: DayNumber) -> Bool {
        let w = code.monitoring[j]
        return w < 0 || holds(w, d, true)
    }

    /// Whether the sample passes an alert's filter (true when it has none).
    mutating func passesFilter(_ j: Int, _ d: DayNumber) -> Bool {
        let f = code.filters[j]
        return f < 0 || holds(f, d, true)
    }

    /// The days alert `j`'s condition read on day `d`: the trailing span (cut at the segment
    /// start; nil when it reads only day `d`) and the span of its `before:` windows (nil: none
    /// known).
    func decisionWindows(_ j: Int, _ d: DayNumber) -> (window: AlertWindow?, baseline: AlertWindow?) {
        let (days, baselines) = code.decisionReach[j]
        var window: AlertWindow?
        if days > 0 {
            window = AlertWindow(from: CivilDate(dayNumber: max(d - DayNumber(days), user.segmentStart(d))), to: CivilDate(dayNumber: d))
        }
        var lo = DayNumber.max, hi = DayNumber.min
        for b in baselines {
            guard let r = windowRange(Int(b.days), .before(b.kind), d) else { continue }
            lo = min(lo, r.lowerBound)
            hi = max(hi, r.upperBound)
        }
        let baseline = lo <= hi ? AlertWindow(from: CivilDate(dayNumber: lo), to: CivilDate(dayNumber: hi)) : nil
        return (window, baseline)
    }

    /// The root of expression `index` of template `slot` of alert `j` (``CompiledRules/templateSlots(_:)``).
    func templateNode(_ j: Int, _ slot: Int, _ index: Int) -> Int32 { code.templates[j][slot][index] }

    mutating func number(_ n: Int32, _ d: DayNumber) -> Double? {
        switch code.nodes[Int(n)] {
        case .number(let v): return v
        case .daily(let i): return daily(Int(i), d)
        case .series(let i): return series(Int(i), d)
        case .local(let slot): return local(Int(slot), d)
        case .window(let f, let x, let days, let minDays, let anchor):
            return window(f, x, Int(days), Int(minDays), anchor, d)
        case .excluding(let x, let kind):
            let k = code.strings[Int(kind)]
            if user.events.values.contains(where: { $0.category == .annotation && $0.kind == k && $0.firstDay <= d && $0.lastDay >= d }) { return nil }
            return number(x, d)
        case .missingDays(let x):
            guard let first = user.firstDay else { return 0 }
            var n = 0
            var k = d
            while k >= first, n < 3650, number(x, k) == nil { n += 1; k -= 1 }
            return Double(n) * 86_400
        case .change(let x, let days):
            let past = d - DayNumber(days)
            guard past >= user.segmentStart(d), let a = number(x, d), let b = number(x, past) else { return nil }
            return a - b
        case .shortfall(let x, let days, let fit, let minDays, let fitMin, let statistic):
            return shortfall(x, Int(days), Int(fit), Int(minDays), Int(fitMin), statistic, d)
        case .daysSince(let kind):
            guard let e = user.latestEvent(code.strings[Int(kind)], onOrBefore: d) else { return nil }
            return Double(d - e) * 86_400
        case .sample(.value): return sample?.value
        case .metadata(let key): return sample?.metadataValue(code.strings[Int(key)])?.asNumber
        case .negate(let x): return number(x, d).map { -$0 }
        case .abs(let x): return number(x, d).map { Swift.abs($0) }
        case .binary(let op, let l, let r):
            guard let a = number(l, d), let b = number(r, d) else { return nil }
            switch op {
            case .add: return a + b
            case .sub: return a - b
            case .mul: return a * b
            case .div: return b == 0 ? nil : a / b
            default: return nil
            }
        default: return nil
        }
    }
}
