import MobilityModel

extension Checker {
    static let aggregationNames: [String: Aggregation] = [
        "mean": .mean, "median": .median, "min": .min, "max": .max, "sum": .sum, "count": .count, "last": .last
    ]
    static let windowNames: [String: WindowFunction] = [
        "mean": .mean, "median": .median, "min": .min, "max": .max, "sum": .sum, "last": .last, "slope": .slope,
        "days_with_data": .daysWithData, "slope_lower": .slopeLower, "slope_upper": .slopeUpper, "slope_error": .slopeError,
        "stddev": .stddev
    ]
    static let otherFunctions = [
        "percentile", "abs", "is_known", "starts_with", "metadata", "days_since", "annotated", "missing_days", "change", "shortfall", "shortfall_z",
        "slope_change", "slope_change_z"
    ]

    static func defaultUnit(_ d: PhysicalDimension) -> MeasureUnit {
        switch d {
        case .speed: .metresPerSecond
        case .length: .metre
        case .time: .day
        case .oxygenUptake: .vo2
        case .dimensionless: .one
        default: MeasureUnit(symbol: d.description, dimension: d, toSI: 1)
        }
    }

    func describe(_ t: ValueType) -> String {
        if case .number(let d) = t { return d == .dimensionless ? "a number" : "a \(d)" }
        return "a \(t)"
    }

    /// Checks an expression; nil when it has an error (already reported).
    mutating func check(_ e: SyntaxExpr) -> Typed? {
        // Series are resolved where first used, so a chain of definitions recurses through here.
        checkDepth += 1
        defer { checkDepth -= 1 }
        guard checkDepth <= RuleLimits.maxEvaluationDepth else {
            if !depthReported {
                error(.nestingTooDeepInExpansion(limit: RuleLimits.maxEvaluationDepth), e.range, notes: [Note(message: .eachDefinitionAddsDepth)])
                depthReported = true
            }
            return nil
        }
        switch e {
        case .error:
            return nil
        case .number(let v, let unitName, _, let ur):
            guard let unitName else { return Typed(expr: .number(v), type: .number(.dimensionless), unit: .one, constant: v) }
            guard let u = MeasureUnit.rule(unitName) else {
                let s = suggestion(for: unitName, among: MeasureUnit.ruleUnits.keys.sorted())
                error(.unknownUnit(unitName), ur ?? e.range, fixIts: ur.map { didYouMean(s, at: $0) } ?? [])
                return nil
            }
            return Typed(expr: .number(u.si(v)), type: .number(u.dimension), unit: u, constant: u.si(v))
        case .string(let s, _):
            return Typed(expr: .string(s), type: .string, unit: .one)
        case .bool(let b, _):
            return Typed(expr: .bool(b), type: .bool, unit: .one)
        case .name(let n, let r):
            return name(n, r)
        case .unary(let op, let x, _):
            guard let t = check(x) else { return nil }
            if op == "not" {
                guard t.type == .bool else { error(.needsOperand(op: "not", needs: "a boolean", found: describe(t.type)), x.range); return nil }
                return Typed(expr: .not(t.expr), type: .bool, unit: .one, usesSample: t.usesSample, lookback: t.lookback)
            }
            guard case .number = t.type else { error(.needsOperand(op: "-", needs: "a number", found: describe(t.type)), x.range); return nil }
            var out = t
            out.expr = .negate(t.expr)
            out.constant = t.constant.map { -$0 }
            return out
        case .binary(let op, let l, let r, let opRange, _):
            let lt = check(l), rt = check(r)
            guard let lt, let rt else { return nil }
            return binary(op, lt, rt, l, r, opRange)
        case .call(let fname, let args, let nr, let range):
            return call(fname, args, nr, range)
        }
    }

    mutating func name(_ n: String, _ r: SourceRange) -> Typed? {
        if let (i, t) = locals[n] {
            usedLocals.insert(n)
            return Typed(expr: .local(i), type: t.type, unit: t.unit, usesSample: t.usesSample, constant: t.constant, lookback: t.lookback)
        }
        if failedLocals.contains(n) { return nil }  // its own error was reported
        if seriesSyntax[n] != nil {
            guard let (i, t) = resolveSeries(n) else { return nil }
            return Typed(expr: .series(i), type: t.type, unit: t.unit, lookback: t.lookback)
        }
        if let f = SampleField(rawValue: n) {
            guard case .sample(let metric) = trigger else {
                error(.sampleFieldOutsideSample(n), r)
                return nil
            }
            switch f {
            case .value: return Typed(expr: .sample(.value), type: .number(metric.dimension), unit: metric.displayUnit, usesSample: true)
            case .bundleID: return Typed(expr: .sample(.bundleID), type: .string, unit: .one, usesSample: true)
            default: return Typed(expr: .sample(f), type: .bool, unit: .one, usesSample: true)
            }
        }
        if let m = MetricKind(identifier: n) {
            error(.metricNeedsAggregation(m.name), r)
            return nil
        }
        var candidates = Array(locals.keys) + Array(seriesSyntax.keys) + MetricKind.allCases.map(\.name)
        if case .sample = trigger { candidates += SampleField.allCases.map(\.rawValue) }
        let s = suggestion(for: n, among: candidates)
        error(.undefinedName(n), r, fixIts: didYouMean(s, at: r))
        return nil
    }

    mutating func binary(_ op: String, _ lt: Typed, _ rt: Typed, _ l: SyntaxExpr, _ r: SyntaxExpr, _ opRange: SourceRange) -> Typed? {
        let sample = lt.usesSample || rt.usesSample
        let lookback = max(lt.lookback, rt.lookback)
        switch op {
        case "and", "or":
            for (t, s) in [(lt, l), (rt, r)] where t.type != .bool {
                error(.needsOperand(op: op, needs: "booleans", found: describe(t.type)), s.range)
                return nil
            }
            return Typed(expr: .binary(op == "and" ? .and : .or, lt.expr, rt.expr), type: .bool, unit: .one, usesSample: sample, lookback: lookback)
        case "<", "<=", ">", ">=", "==", "!=":
            let bop = BinaryOp(rawValue: op)!
            switch (lt.type, rt.type) {
            case (.number(let a), .number(let b)):
                guard a == b else {
                    error(.notComparableUnits(left: describe(lt.type), right: describe(rt.type)), opRange, notes: hint(a, b))
                    return nil
                }
            case (.bool, .bool), (.string, .string):
                guard op == "==" || op == "!=" else {
                    error(.orderingNeedsNumbers(op: op, type: describe(lt.type)), opRange)
                    return nil
                }
            default:
                error(.notComparable(left: describe(lt.type), right: describe(rt.type)), opRange)
                return nil
            }
            return Typed(expr: .binary(bop, lt.expr, rt.expr), type: .bool, unit: .one, usesSample: sample, lookback: lookback)
        default:
            guard case .number(let a) = lt.type, case .number(let b) = rt.type else {
                let bad = lt.type == .bool || lt.type == .string ? (lt, l) : (rt, r)
                error(.needsOperand(op: op, needs: "numbers", found: describe(bad.0.type)), bad.1.range)
                return nil
            }
            let bop = BinaryOp(rawValue: op)!
            var dim: PhysicalDimension
            var unit: MeasureUnit
            var constant: Double?
            switch bop {
            case .add, .sub:
                guard a == b else {
                    error(.differentDimensions(op: op, left: describe(lt.type), right: describe(rt.type)), opRange, notes: hint(a, b))
                    return nil
                }
                dim = a
                unit = lt.constant != nil && rt.constant == nil ? rt.unit : lt.unit
                if let x = lt.constant, let y = rt.constant { constant = bop == .add ? x + y : x - y }
            case .mul:
                dim = a * b
                unit = b == .dimensionless ? lt.unit : a == .dimensionless ? rt.unit : Checker.defaultUnit(dim)
                if let x = lt.constant, let y = rt.constant { constant = x * y }
            default:
                dim = a / b
                unit = b == .dimensionless ? lt.unit : Checker.defaultUnit(dim)
                if let x = lt.constant, let y = rt.constant, y != 0 { constant = x / y }
            }
            if unit.dimension != dim { unit = Checker.defaultUnit(dim) }
            return Typed(
                expr: .binary(bop, lt.expr, rt.expr), type: .number(dim), unit: unit, usesSample: sample,
                constant: constant, lookback: lookback)
        }
    }

    func hint(_ a: PhysicalDimension, _ b: PhysicalDimension) -> [Note] {
        if (a == .dimensionless) != (b == .dimensionless) {
            return [Note(message: .giveNumberUnit)]
        }
        return []
    }

    // MARK: Calls

    mutating func call(_ fname: String, _ args: [SyntaxArgument], _ nr: SourceRange, _ range: SourceRange) -> Typed? {
        let positional = args.filter { $0.label == nil }
        var named: [String: SyntaxArgument] = [:]
        for a in args {
            guard let l = a.label else { continue }
            if named[l] != nil { error(.duplicateArgument(l), a.labelRange ?? range); return nil }
            named[l] = a
        }
        let ctx = CallContext(fname: fname, args: args, positional: positional, range: range)
        func allow(_ labels: Set<String>) -> Bool { ctx.allow(labels, &self) }
        func arity(_ n: ClosedRange<Int>, _ usage: String) -> Bool { ctx.arity(n, usage, &self) }

        // A daily aggregation of a metric: p95(walkingSpeed), mean(walkingSpeed, source: device).
        let pct = percentileName(fname)
        if let first = positional.first, case .name(let mname, let mr) = first.value, MetricKind(identifier: mname) != nil,
            pct != nil || fname == "percentile" || Checker.aggregationNames[fname] != nil
        {
            return dailyAggregate(ctx, metric: MetricKind(identifier: mname)!, metricRange: mr, pct: pct, named)
        }
        if pct != nil || fname == "percentile" {
            if let first = positional.first {
                error(.needsMetricArgument(function: fname), first.value.range)
            } else {
                _ = arity(1...1, "\(fname)(walkingSpeed)")
            }
            return nil
        }
        if let wf = Checker.windowNames[fname] {
            return window(ctx, wf, named)
        }
        switch fname {
        case "abs":
            guard allow([]), arity(1...1, "abs(x)"), let t = check(positional[0].value) else { return nil }
            guard case .number = t.type else {
                error(.needsOperand(op: "abs", needs: "a number", found: describe(t.type)), positional[0].value.range); return nil
            }
            var o = t
            o.expr = .abs(t.expr)
            o.constant = t.constant.map { Swift.abs($0) }
            return o
        case "is_known":
            guard allow([]), arity(1...1, "is_known(x)"), let t = check(positional[0].value) else { return nil }
            return Typed(expr: .isKnown(t.expr), type: .bool, unit: .one, usesSample: t.usesSample, lookback: t.lookback)
        case "starts_with":
            guard allow([]), arity(2...2, "starts_with(bundle_id, \"com.apple.health\")"),
                let a = check(positional[0].value), let b = check(positional[1].value)
            else { return nil }
            guard a.type == .string, b.type == .string else { error(.startsWithNeedsStrings, range); return nil }
            return Typed(expr: .startsWith(a.expr, b.expr), type: .bool, unit: .one, usesSample: a.usesSample || b.usesSample)
        case "metadata":
            guard allow([]), arity(1...1, "metadata(\"HKMetadataKeyAppleDeviceCalibrated\")") else { return nil }
            guard case .string(let key, _) = positional[0].value else { error(.metadataKeyNotString, positional[0].value.range); return nil }
            guard case .sample = trigger else { error(.metadataOutsideSample, nr); return nil }
            return Typed(expr: .metadata(MetadataKey.canonical(key)), type: .number(.dimensionless), unit: .one, usesSample: true)
        case "days_since":
            guard allow([]), arity(1...1, "days_since(injury)"), let k = kind(positional[0].value, clinical: true) else { return nil }
            return Typed(expr: .daysSince(k), type: .number(.time), unit: .day)
        case "annotated":
            guard allow(["within"]), arity(1...1, "annotated(heat_wave, within: 7 d)"), let k = kind(positional[0].value, clinical: false) else { return nil }
            var days = 1
            if let w = named["within"] { guard let s = duration(w.value, after: "'within'", wholeDays: true) else { return nil }; days = Int(s / 86_400) }
            return Typed(expr: .annotated(k, days: days), type: .bool, unit: .one, lookback: days)
        case "missing_days":
            guard allow([]), arity(1...1, "missing_days(speed_p95)"), let t = dailyOperand(positional[0].value, fname) else { return nil }
            return Typed(expr: .missingDays(t.expr), type: .number(.time), unit: .day, lookback: t.lookback + 90)
        case "change":
            guard allow([]), arity(2...2, "change(speed_7d, 14 d)"), let t = dailyOperand(positional[0].value, fname),
                let s = duration(positional[1].value, after: "the series in 'change'", wholeDays: true)
            else { return nil }
            var o = t
            o.expr = .change(t.expr, days: Int(s / 86_400))
            o.constant = nil
            o.lookback = t.lookback + Int(s / 86_400)
            return o
        case "shortfall", "shortfall_z", "slope_change", "slope_change_z":
            return shortfall(ctx, BreakStatistic(name: fname) ?? .shortfall, named)
        default:
            let all = Array(Checker.windowNames.keys) + Array(Checker.aggregationNames.keys) + Checker.otherFunctions + ["p95", "p50"]
            let s = suggestion(for: fname, among: all)
            error(.unknownFunction(fname), nr, fixIts: didYouMean(s, at: nr))
            // Errors inside the arguments are their own causes; a bare metric is not one (the
            // unknown function may well have been an aggregation of it, as p101(walkingSpeed)).
            for a in args {
                if case .name(let n, _) = a.value, MetricKind(identifier: n) != nil { continue }
                _ = check(a.value)
            }
            return nil
        }
    }

    func percentileName(_ n: String) -> Double? {
        guard n.count >= 2, n.first == "p", let q = Double(n.dropFirst().replacingOccurrences(of: "_", with: ".")), q > 0, q < 100 else { return nil }
        return q
    }

    mutating func kind(_ e: SyntaxExpr, clinical: Bool) -> String? {
        guard case .name(let k, let r) = e else {
            error(.expectedKind(clinical: clinical), e.range)
            return nil
        }
        let known = clinical ? program.clinicalKinds : program.annotationKinds.union(program.clinicalKinds)
        guard known.contains(k) else {
            let s = suggestion(for: k, among: known)
            error(
                .unknownKind(clinical: clinical, name: k), r, notes: [Note(message: .declareKinds(clinical: clinical, name: k))], fixIts: didYouMean(s, at: r))
            return nil
        }
        return k
    }

    mutating func dailyOperand(_ e: SyntaxExpr, _ fname: String) -> Typed? {
        guard let t = check(e) else { return nil }
        guard case .number = t.type else { error(.needsOperand(op: fname, needs: "a daily number series", found: describe(t.type)), e.range); return nil }
        guard !t.usesSample else { error(.pastDaysUseSample(function: fname), e.range); return nil }
        return t
    }

    mutating func dailyAggregate(
        _ ctx: CallContext, metric: MetricKind, metricRange: SourceRange, pct: Double?,
        _ named: [String: SyntaxArgument]
    ) -> Typed? {
        let fname = ctx.fname, positional = ctx.positional
        func allow(_ labels: Set<String>) -> Bool { ctx.allow(labels, &self) }
        func arity(_ n: ClosedRange<Int>, _ usage: String) -> Bool { ctx.arity(n, usage, &self) }
        let isPct = pct != nil || fname == "percentile"
        guard allow(isPct ? ["source", "method"] : ["source"]) else { return nil }
        var q = pct ?? 0
        if fname == "percentile" {
            guard arity(2...2, "percentile(walkingSpeed, 95)") else { return nil }
            guard case .number(let v, nil, let r, _) = positional[1].value else {
                error(.percentileNotNumber, positional[1].value.range)
                return nil
            }
            guard v >= 0, v <= 100 else { error(.percentileOutOfRange, r); return nil }
            q = v
        } else if !arity(1...1, "\(fname)(\(metric.name), source: device)") {
            return nil
        }
        var provenance: Provenance?
        if let s = named["source"] {
            switch s.value {
            case .name("device", _): provenance = .device
            case .name("user_entered", _): provenance = .userEntered
            case .name("any", _): provenance = nil
            default:
                error(.invalidSource, s.value.range)
                return nil
            }
        }
        var method = PercentileMethod.linear
        if let m = named["method"] {
            switch m.value {
            case .name("linear", _): method = .linear
            case .name("nearest", _), .name("nearest_rank", _): method = .nearestRank
            default:
                error(.invalidMethod, m.value.range)
                return nil
            }
        }
        let agg: Aggregation = isPct ? .percentile(q, method) : Checker.aggregationNames[fname]!
        let input = DailyInput(metric: metric, provenance: provenance, aggregation: agg)
        let idx: Int
        if let i = inputIndex[input] {
            idx = i
        } else {
            idx = program.inputs.count
            program.inputs.append(input)
            inputIndex[input] = idx
        }
        let (type, unit): (ValueType, MeasureUnit) =
            agg == .count
            ? (.number(.dimensionless), .one)
            : agg == .sum && metric.dimension == .dimensionless
                ? (.number(.dimensionless), .one)
                : (.number(metric.dimension), metric.displayUnit)
        return Typed(expr: .daily(idx), type: type, unit: unit)
    }

    mutating func window(_ ctx: CallContext, _ wf: WindowFunction, _ named: [String: SyntaxArgument]) -> Typed? {
        let fname = ctx.fname, positional = ctx.positional, range = ctx.range
        func allow(_ labels: Set<String>) -> Bool { ctx.allow(labels, &self) }
        func arity(_ n: ClosedRange<Int>, _ usage: String) -> Bool { ctx.arity(n, usage, &self) }
        guard allow(["min", "before", "after", "excluding"]), arity(2...2, "\(fname)(speed_p95, 7 d, min: 4)") else { return nil }
        guard var t = dailyOperand(positional[0].value, fname) else { return nil }
        if let x = named["excluding"] {
            guard let k = kind(x.value, clinical: false) else { return nil }
            t.expr = .excluding(t.expr, annotation: k)
        }
        guard let secs = duration(positional[1].value, after: "the series in '\(fname)'", wholeDays: true) else { return nil }
        let days = Int(secs / 86_400)
        var minDays = wf.minimumDays
        if let m = named["min"] {
            guard case .number(let v, let u, let r, _) = m.value, u == nil || u == "d", v == v.rounded(), v >= 1 else {
                error(.invalidMinDays, m.value.range)
                return nil
            }
            guard Int(v) <= days else {
                error(.minDaysExceedWindow(min: Int(v), days: days), r)
                return nil
            }
            minDays = max(Int(v), wf.minimumDays)
        }
        var anchor = WindowAnchor.current
        if named["before"] != nil && named["after"] != nil {
            error(.beforeAndAfter, range)
            return nil
        }
        if let b = named["before"] { guard let k = kind(b.value, clinical: true) else { return nil }; anchor = .before(k) }
        if let a = named["after"] { guard let k = kind(a.value, clinical: true) else { return nil }; anchor = .after(k) }
        if anchor != .current { program.anchoredWindowDays = max(program.anchoredWindowDays, days + t.lookback) }
        var type = t.type
        var unit = t.unit
        switch wf {
        case .slope, .slopeLower, .slopeUpper, .slopeError:
            guard case .number(let d) = t.type else { return nil }
            type = .number(d / .time)
            unit = MeasureUnit(
                symbol: (t.unit.symbol.isEmpty ? "1" : t.unit.symbol) + "/d", dimension: d / .time, toSI: t.unit.toSI / MeasureUnit.secondsPerDay)
        case .daysWithData:
            type = .number(.time)
            unit = .day
        default: break
        }
        return Typed(
            expr: .window(wf, t.expr, days: days, minDays: minDays, anchor: anchor), type: type, unit: unit,
            lookback: t.lookback + days)
    }
}

extension Checker {
    /// `shortfall(x, K d, fit: M d, min: k, fit_min: m, excluding: KIND)`, `shortfall_z(…)`,
    /// `slope_change(…)` and `slope_change_z(…)`: the last K days against the line fitted to the
    /// M days before them.
    mutating func shortfall(_ ctx: CallContext, _ statistic: BreakStatistic, _ named: [String: SyntaxArgument]) -> Typed? {
        let fname = ctx.fname, positional = ctx.positional
        guard ctx.allow(["fit", "min", "fit_min", "excluding"], &self),
            ctx.arity(2...2, "\(fname)(speed_p95, 7 d, fit: 28 d)", &self),
            var t = dailyOperand(positional[0].value, fname)
        else { return nil }
        guard case .number = t.type else {
            error(.needsOperand(op: fname, needs: "a number", found: describe(t.type)), positional[0].value.range)
            return nil
        }
        if let x = named["excluding"] {
            guard let k = kind(x.value, clinical: false) else { return nil }
            t.expr = .excluding(t.expr, annotation: k)
        }
        guard let secs = duration(positional[1].value, after: "the series in '\(fname)'", wholeDays: true) else { return nil }
        let days = Int(secs / 86_400)
        var fit = 28
        if let f = named["fit"] {
            guard let s = duration(f.value, after: "'fit'", wholeDays: true) else { return nil }
            fit = Int(s / 86_400)
        }
        func coverage(_ label: String, _ within: Int, _ floor: Int, _ fallback: Int) -> Int? {
            guard let m = named[label] else { return fallback }
            guard case .number(let v, let u, let r, _) = m.value, u == nil || u == "d", v == v.rounded(), v >= 1 else {
                error(.invalidMinDays, m.value.range)
                return nil
            }
            guard Int(v) <= within else {
                error(.minDaysExceedWindow(min: Int(v), days: within, label: label), r)
                return nil
            }
            return max(Int(v), floor)
        }
        guard let minDays = coverage("min", days, 1, min(3, days)), let fitMin = coverage("fit_min", fit, 3, min(7, fit)) else { return nil }
        guard fit >= 3 else {
            error(.fitTooShort(days: fit), named["fit"]?.value.range ?? ctx.range)
            return nil
        }
        var type = t.type, unit = t.unit
        if statistic.standardised {
            type = .number(.dimensionless)
            unit = .one
        } else if statistic == .slopeChange, case .number(let d) = t.type {
            type = .number(d / .time)
            unit = MeasureUnit(
                symbol: (t.unit.symbol.isEmpty ? "1" : t.unit.symbol) + "/d", dimension: d / .time, toSI: t.unit.toSI / MeasureUnit.secondsPerDay)
        }
        return Typed(
            expr: .shortfall(t.expr, days: days, fit: fit, minDays: minDays, fitMinDays: fitMin, statistic: statistic),
            type: type, unit: unit, lookback: t.lookback + days + fit)
    }
}

/// The pieces of a call that argument checks need.
struct CallContext {
    let fname: String
    let args: [SyntaxArgument]
    let positional: [SyntaxArgument]
    let range: SourceRange

    func allow(_ labels: Set<String>, _ c: inout Checker) -> Bool {
        for a in args {
            guard let l = a.label, !labels.contains(l) else { continue }
            let s = suggestion(for: l, among: labels)
            let at = a.labelRange ?? range
            c.error(
                .unknownArgument(function: fname, label: l), at,
                notes: labels.isEmpty ? [] : [Note(message: .takesArguments(labels.sorted()))], fixIts: c.didYouMean(s, at: at))
            return false
        }
        return true
    }

    func arity(_ n: ClosedRange<Int>, _ usage: String, _ c: inout Checker) -> Bool {
        guard !n.contains(positional.count) else { return true }
        let count = n.lowerBound == n.upperBound ? "\(n.lowerBound)" : "\(n.lowerBound) to \(n.upperBound)"
        c.error(
            .arityMismatch(function: fname, expected: count, plural: n.upperBound != 1, found: positional.count), range,
            notes: [Note(message: .usage(usage))])
        return false
    }
}
