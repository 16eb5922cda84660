import MobilityModel

/// Checks parsed rule files and lowers them to a ``Program``: names, types, units and durations,
/// clause structure, templates and the inhibition graph. Collects every diagnostic it can.
package struct Checker {
    /// Parses and checks rule sources. The program is nil when there is any error.
    package static func check(_ sources: [SourceFile]) -> (program: Program?, diagnostics: [Diagnostic]) {
        var c = Checker(sources: sources)
        let p = c.run()
        let hasError = c.diagnostics.contains { $0.severity == .error }
        return (hasError ? nil : p, c.capped())
    }

    /// The diagnostics, at most ``RuleLimits/maxDiagnosticsPerFile`` a file (the first by
    /// position), and for a file with more a `too-many-diagnostics` note at its end.
    func capped() -> [Diagnostic] {
        var byFile: [Int: [Diagnostic]] = [:]
        for d in diagnostics { byFile[d.range.file, default: []].append(d) }
        var out: [Diagnostic] = []
        for f in byFile.keys.sorted() {
            var list = byFile[f]!
            var more = dropped[f] ?? 0
            if list.count > RuleLimits.maxDiagnosticsPerFile {
                list.sort { $0.range.range.lowerBound < $1.range.range.lowerBound }
                more += list.count - RuleLimits.maxDiagnosticsPerFile
                list.removeLast(list.count - RuleLimits.maxDiagnosticsPerFile)
            }
            out += list
            if more > 0 {
                let end = sources[f].bytes.count
                out.append(Diagnostic(.tooManyDiagnostics(more: more), at: SourceRange(file: f, end..<end)))
            }
        }
        return out
    }

    /// Checks a single source text (tests, tools).
    package static func check(text: String, path: String = "<input>") -> (program: Program?, diagnostics: [Diagnostic]) {
        check([SourceFile(path: path, text: text)])
    }

    let sources: [SourceFile]
    var diagnostics: [Diagnostic] = []
    /// Per file, the lexer's and parser's diagnostics past the cap.
    var dropped: [Int: Int] = [:]
    /// The recursion depth of ``check(_:)`` (bounded by ``RuleLimits/maxEvaluationDepth``), and
    /// whether that was reported (once: a long chain of definitions hits it again and again).
    var checkDepth = 0
    var depthReported = false
    var program = Program()
    var inputIndex: [DailyInput: Int] = [:]

    // Series resolution state.
    var seriesSyntax: [String: (SyntaxExpr, SourceRange)] = [:]
    var seriesIndex: [String: Int] = [:]
    var seriesTyped: [Int: Typed] = [:]
    var resolving: Set<String> = []
    var failedSeries: Set<String> = []

    // Alert-local scope.
    var locals: [String: (Int, Typed)] = [:]
    var usedLocals: Set<String> = []
    /// `let`s of the rule at hand whose expression had errors: a use of one is not reported
    /// again as an undefined name (one diagnostic per cause).
    var failedLocals: Set<String> = []
    var trigger: Trigger = .day

    init(sources: [SourceFile]) { self.sources = sources }

    struct Typed {
        var expr: Expr
        var type: ValueType
        var unit: MeasureUnit
        var usesSample: Bool = false
        var constant: Double? = nil
        var lookback: Int = 0
    }

    mutating func error(_ message: RuleMessage, _ r: SourceRange, notes: [Note] = [], fixIts: [FixIt] = []) {
        diagnostics.append(Diagnostic(message, at: r, notes: notes, fixIts: fixIts))
    }

    /// A "did you mean" fix-it replacing `range` with the suggestion, if there is one.
    func didYouMean(_ suggestion: String?, at range: SourceRange) -> [FixIt] {
        suggestion.map { [FixIt(replacement: $0, range: range)] } ?? []
    }

    // MARK: Driver

    mutating func run() -> Program {
        program.files = sources
        var files: [SyntaxFile] = []
        for (i, s) in sources.enumerated() {
            guard s.bytes.count <= RuleLimits.maxFileBytes else {
                error(.fileTooLarge(bytes: RuleLimits.maxFileBytes), SourceRange(file: i, 0..<0))
                files.append(SyntaxFile(file: i, decls: []))
                continue
            }
            let (f, d, n) = Parser.parseCounting(s, file: i)
            files.append(f)
            diagnostics += d
            if n > 0 { dropped[i] = n }
        }
        var alertDecls: [AlertDeclaration] = []
        var reportDecl: (items: [SyntaxReportItem], keywordRange: SourceRange)?
        var seenNames: [String: SourceRange] = [:]
        func declare(_ n: String, _ r: SourceRange, what: String) -> Bool {
            if let prev = seenNames[n] {
                error(.duplicateDefinition(what: what, name: n), r, notes: [Note(message: .firstDefinedHere, range: prev)])
                return false
            }
            seenNames[n] = r
            return true
        }
        for f in files {
            for d in f.decls {
                switch d {
                case .kinds(let cat, let names, _):
                    for n in names {
                        if cat == "event" { program.clinicalKinds.insert(n) } else { program.annotationKinds.insert(n) }
                    }
                case .series(let n, let nr, let e, _):
                    if MetricKind(identifier: n) != nil { error(.seriesNamedLikeMetric(n), nr); continue }
                    if declare(n, nr, what: "series") { seriesSyntax[n] = (e, nr) }
                case .alert(let n, let nr, let clauses, _):
                    if declare(n, nr, what: "alert") { alertDecls.append(AlertDeclaration(name: n, nameRange: nr, clauses: clauses)) }
                case .report(let items, let kr, _):
                    if let first = reportDecl {
                        error(.duplicateReport, kr, notes: [Note(message: .firstDefinedHere, range: first.keywordRange)])
                    } else {
                        reportDecl = (items, kr)
                    }
                }
            }
        }
        // Series in source order; dependencies resolve first.
        for f in files {
            for case .series(let n, _, _, _) in f.decls where seriesSyntax[n] != nil { _ = resolveSeries(n) }
        }
        var inhibitors: [[(String, SourceRange)]] = []
        for decl in alertDecls {
            if let a = checkAlert(decl) {
                program.alerts.append(a.rule)
                inhibitors.append(a.inhibitedBy)
            }
        }
        orderByInhibition(inhibitors)
        if let reportDecl { program.report = checkReport(reportDecl.items, alerts: Set(alertDecls.map(\.name))) }
        checkCost()
        return program
    }

    mutating func resolveSeries(_ name: String) -> (Int, Typed)? {
        if let i = seriesIndex[name], let t = seriesTyped[i] { return (i, t) }
        // A series that failed is reported once, where it is defined, not again at each use.
        guard !failedSeries.contains(name), let (syntax, nr) = seriesSyntax[name] else { return nil }
        if resolving.contains(name) {
            error(.recursiveSeries(name), nr)
            return nil
        }
        resolving.insert(name)
        defer { resolving.remove(name) }
        let savedLocals = locals, savedTrigger = trigger
        locals = [:]
        trigger = .day
        defer { locals = savedLocals; trigger = savedTrigger }
        guard let t = check(syntax) else { failedSeries.insert(name); return nil }
        guard case .number = t.type else {
            error(.seriesNotNumber(name: name, type: "\(t.type)"), syntax.range)
            failedSeries.insert(name)
            return nil
        }
        let i = program.series.count
        program.series.append(Binding(name: name, expr: t.expr, type: t.type, displayUnit: t.unit, range: nr))
        seriesIndex[name] = i
        seriesTyped[i] = t
        program.lookbackDays = max(program.lookbackDays, t.lookback)
        return (i, t)
    }

    // MARK: Alerts

    static let singleClauses: Set<String> = ["on", "when", "during", "for", "keep_firing_for", "repeat", "cooldown", "severity", "labels", "details"]

    /// The key of a clause that may appear once: `summary` is the former name of `details`, and
    /// each kind of headline is a clause of its own (`headline`, `headline resolved`).
    static func singleKey(_ c: SyntaxClause) -> String? {
        switch c.keyword {
        case "summary": "details"
        case "headline": "headline" + (c.name.map { $0 == "firing" ? "" : " " + $0 } ?? "")
        default: singleClauses.contains(c.keyword) ? c.keyword : nil
        }
    }

    /// An alert's declaration as the parser gave it, held until every series is resolved.
    struct AlertDeclaration {
        let name: String
        let nameRange: SourceRange
        let clauses: [SyntaxClause]
    }

    /// Checks one alert: its rule, and the names (with their places) of the alerts it is inhibited by.
    mutating func checkAlert(_ decl: AlertDeclaration) -> (rule: AlertRule, inhibitedBy: [(String, SourceRange)])? {
        let name = decl.name, nr = decl.nameRange, clauses = decl.clauses
        locals = [:]
        usedLocals = []
        failedLocals = []
        trigger = .day
        var seen: [String: SourceRange] = [:]
        var ok = true
        for c in clauses {
            guard let key = Checker.singleKey(c) else { continue }
            if seen[key] != nil {
                error(.duplicateClause(alert: name, keyword: key), c.keywordRange)
                ok = false
            }
            seen[key] = c.keywordRange
        }
        if let on = clauses.first(where: { $0.keyword == "on" }), let w = on.words.first {
            switch w.0 {
            case "day": trigger = .day
            case "sample":
                if let m = on.name, let metric = MetricKind(identifier: m) {
                    trigger = .sample(metric)
                } else if let m = on.name, let nrange = on.nameRange {
                    let s = suggestion(for: m, among: MetricKind.allCases.map(\.name))
                    error(.unknownSampleType(m), nrange, fixIts: didYouMean(s, at: nrange))
                    ok = false
                }
            default:
                error(.expectedTrigger(found: w.0), w.1)
                ok = false
            }
        }
        var filter: Expr?
        if let on = clauses.first(where: { $0.keyword == "on" }), let fe = on.expr, case .sample = trigger {
            if let t = check(fe) {
                if t.type == .bool {
                    filter = t.expr
                } else {
                    error(.filterNotBoolean(type: "\(t.type)"), fe.range)
                    ok = false
                }
            } else {
                ok = false
            }
        }
        var rule = AlertRule(
            name: name, trigger: trigger, filter: filter, lets: [], condition: .bool(false), forSeconds: 0, keepFiringForSeconds: 0,
            repeatSeconds: 0, cooldownSeconds: 0, severity: .warning, labels: [], headlines: [:], details: Template(parts: []), inhibitedBy: [],
            range: nr)
        var condition: Typed?
        var inhibit: [(String, SourceRange)] = []
        for c in clauses {
            switch c.keyword {
            case "let":
                guard let n = c.name, let nrange = c.nameRange, let e = c.expr else { continue }
                if locals[n] != nil || seriesSyntax[n] != nil {
                    error(.duplicateLet(n), nrange)
                    ok = false
                    continue
                }
                guard let t = check(e) else { failedLocals.insert(n); ok = false; continue }
                locals[n] = (rule.lets.count, t)
                rule.lets.append(Binding(name: n, expr: t.expr, type: t.type, displayUnit: t.unit, range: nrange))
                program.lookbackDays = max(program.lookbackDays, t.lookback)
            case "when":
                guard let e = c.expr else { continue }
                guard let t = check(e) else { ok = false; continue }
                guard t.type == .bool else {
                    error(.whenNotBoolean(type: "\(t.type)"), e.range)
                    ok = false
                    continue
                }
                condition = t
                program.lookbackDays = max(program.lookbackDays, t.lookback)
            case "during":
                guard let e = c.expr else { continue }
                guard let t = check(e) else { ok = false; continue }
                guard t.type == .bool else {
                    error(.duringNotBoolean(type: "\(t.type)"), e.range)
                    ok = false
                    continue
                }
                rule.monitoring = t.expr
                program.lookbackDays = max(program.lookbackDays, t.lookback)
            case "for", "keep_firing_for", "repeat", "cooldown":
                guard let e = c.expr, let secs = duration(e, after: "'\(c.keyword)'", wholeDays: false) else { ok = false; continue }
                switch c.keyword {
                case "for": rule.forSeconds = secs
                case "keep_firing_for": rule.keepFiringForSeconds = secs
                case "repeat": rule.repeatSeconds = secs
                default: rule.cooldownSeconds = secs
                }
            case "severity":
                guard let w = c.words.first else { continue }
                if let s = Severity(rawValue: w.0) {
                    rule.severity = s
                } else {
                    error(.unknownSeverity(w.0), w.1)
                    ok = false
                }
            case "labels":
                var keys = Set<String>()
                for p in c.pairs {
                    if !keys.insert(p.key).inserted { error(.duplicateLabel(p.key), p.range); ok = false }
                    if ["rule", "user", "severity"].contains(p.key) { error(.reservedLabel(p.key), p.range); ok = false }
                }
                rule.labels = c.pairs.map { ($0.key, $0.value) }.sorted { $0.0 < $1.0 }
            case "details", "summary":
                guard let w = c.words.first else { continue }
                if let t = template(w.0, w.1, what: "details") { rule.details = t } else { ok = false }
            case "headline":
                guard let w = c.words.first else { continue }
                let kind = c.name.flatMap(TransitionKind.init) ?? .firing
                guard let t = template(w.0, w.1, what: "headline") else { ok = false; continue }
                rule.headlines[kind] = t
                let width = TemplateText.nominalWidth(t.parts, rule: name)
                if width > TemplateText.headlineLimit {
                    error(
                        .headlineTooLong(alert: name, kind: kind == .firing ? nil : kind.rawValue, width: width, limit: TemplateText.headlineLimit),
                        w.1, notes: [Note(message: .headlineWidths)])
                    ok = false
                }
            case "inhibited_by":
                inhibit += c.words
            default: break
            }
        }
        guard let cond = condition else {
            if ok, seen["when"] == nil { error(.missingWhen(alert: name), nr) }
            return nil
        }
        rule.condition = cond.expr
        // (a headline with errors was reported already)
        if !clauses.contains(where: { $0.keyword == "headline" }) { diagnostics.append(Diagnostic(.missingHeadline(alert: name), at: nr)) }
        for (n, (_, t)) in locals where !usedLocals.contains(n) {
            _ = t
            if let b = rule.lets.first(where: { $0.name == n }) {
                diagnostics.append(Diagnostic(.unusedLet(n), at: b.range))
            }
        }
        return ok ? (rule, inhibit) : nil
    }

    mutating func orderByInhibition(_ inhibitors: [[(String, SourceRange)]]) {
        let names = program.alerts.map(\.name)
        var edges: [[Int]] = Array(repeating: [], count: names.count)
        for (i, list) in inhibitors.enumerated() {
            for (n, r) in list {
                if let j = names.firstIndex(of: n) {
                    if j == i { error(.selfInhibition(n), r) } else { edges[i].append(j) }
                } else {
                    let s = suggestion(for: n, among: names)
                    error(.unknownAlert(n), r, fixIts: didYouMean(s, at: r))
                }
            }
        }
        // Depth-first topological order: inhibitors before the alerts they inhibit.
        var state = Array(repeating: 0, count: names.count), order: [Int] = []
        func visit(_ i: Int, _ checker: inout Checker) {
            if state[i] == 2 { return }
            if state[i] == 1 {
                checker.error(.inhibitionCycle(through: names[i]), checker.program.alerts[i].range)
                return
            }
            state[i] = 1
            for j in edges[i] { visit(j, &checker) }
            state[i] = 2
            order.append(i)
        }
        for i in names.indices { visit(i, &self) }
        let old = program.alerts
        let newIndex = Dictionary(uniqueKeysWithValues: order.enumerated().map { ($1, $0) })
        program.alerts = order.map { i in
            var a = old[i]
            a.inhibitedBy = edges[i].compactMap { newIndex[$0] }
            return a
        }
    }

    // MARK: Durations and templates

    mutating func duration(_ e: SyntaxExpr, after what: String, wholeDays: Bool) -> Int64? {
        guard let t = check(e) else { return nil }
        guard t.type == .number(.time), let v = t.constant else {
            error(.expectedDuration(after: what, found: "\(t.type)", notConstant: t.constant == nil && t.type == .number(.time)), e.range)
            return nil
        }
        guard v >= 0, v <= 3650 * 86_400 else {
            error(.durationOutOfRange(after: what), e.range)
            return nil
        }
        if wholeDays {
            guard v >= 86_400, v.truncatingRemainder(dividingBy: 86_400) == 0 else {
                error(.windowNotWholeDays(after: what), e.range)
                return nil
            }
        }
        return Int64(v.rounded())
    }
}
