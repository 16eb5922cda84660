import MobilityModel

/// Checks the `report` block: panels and fields at most once, the series they name exist and fit
/// the panel's display unit, condition series are counts, the rules named exist.
extension Checker {
    mutating func checkReport(_ items: [SyntaxReportItem], alerts: Set<String>) -> ReportDeclaration? {
        var report = ReportDeclaration()
        var ok = true
        var seen: Set<String> = []
        for item in items {
            if item.keyword != "condition" && item.keyword != "explain" && !seen.insert(item.keyword).inserted {
                error(.duplicateInReport(block: "the report", keyword: item.keyword), item.keywordRange)
                ok = false
                continue
            }
            switch item.keyword {
            case "walking_speed", "double_support":
                guard let panel = trendPanel(item) else { ok = false; continue }
                if item.keyword == "walking_speed" { report.speed = panel } else { report.doubleSupport = panel }
            case "six_minute_walk":
                guard let panel = walkPanel(item, alerts: alerts) else { ok = false; continue }
                report.sixMinuteWalk = panel
            case "condition":
                guard item.words.count == 3 else { ok = false; continue }
                let (name, r) = item.words[2]
                guard let t = reportSeries(name, r) else { ok = false; continue }
                guard t.type == .number(.dimensionless) else {
                    error(.reportConditionNotCount(series: name, type: describe(t.type)), r)
                    ok = false
                    continue
                }
                report.conditions.append(.init(group: item.words[0].0, label: item.words[1].0, series: name))
            case "explain":
                for (n, r) in item.words {
                    guard reportAlert(n, r, alerts: alerts) else { ok = false; continue }
                    if !report.explanations.contains(n) { report.explanations.append(n) }
                }
            default: break
            }
        }
        return ok ? report : nil
    }

    /// The fields of a panel by keyword (the first of each), and false when one was repeated (reported).
    mutating func reportFields(_ item: SyntaxReportItem) -> ([String: SyntaxReportItem], Bool) {
        var fields: [String: SyntaxReportItem] = [:]
        var ok = true
        for f in item.fields {
            if fields[f.keyword] != nil {
                error(.duplicateInReport(block: "'\(item.keyword)'", keyword: f.keyword), f.keywordRange)
                ok = false
                continue
            }
            fields[f.keyword] = f
        }
        return (fields, ok)
    }

    mutating func trendPanel(_ item: SyntaxReportItem) -> ReportDeclaration.TrendPanel? {
        var (fields, ok) = reportFields(item)
        let daily = fields["daily"]?.words.first
        if daily == nil {
            error(.missingReportField(panel: item.keyword, field: "daily"), item.keywordRange)
            ok = false
        }
        let dt = daily.flatMap { reportSeries($0.0, $0.1) }
        if daily != nil && dt == nil { ok = false }
        var unit = dt?.unit
        if let u = fields["unit"]?.words.first {
            if let mu = reportUnit(u) { unit = mu } else { ok = false; unit = nil }
        }
        if let daily, let dt, let unit { ok = reportFits(daily.0, dt, daily.1, unit) && ok }
        var smoothed: String?
        if let s = fields["smoothed"]?.words.first {
            if let st = reportSeries(s.0, s.1) {
                if let unit = unit ?? (dt == nil ? st.unit : nil) { ok = reportFits(s.0, st, s.1, unit) && ok }
            } else {
                ok = false
            }
            smoothed = s.0
        }
        var days: Int?, event: String?
        if let b = fields["baseline"], let e = b.expr {
            if let secs = duration(e, after: "'baseline'", wholeDays: true) { days = Int(secs / 86_400) } else { ok = false }
            if let k = b.words.first {
                if let kind = kind(.name(k.0, range: k.1), clinical: true) { event = kind } else { ok = false }
            }
        }
        guard ok, let daily, let unit else { return nil }
        return .init(title: fields["title"]?.words.first?.0, daily: daily.0, smoothed: smoothed, baselineDays: days, baselineEvent: event, unit: unit)
    }

    mutating func walkPanel(_ item: SyntaxReportItem, alerts: Set<String>) -> ReportDeclaration.SixMinuteWalkPanel? {
        var (fields, ok) = reportFields(item)
        var named: [(String, Typed, SourceRange)] = []
        for key in ["clinic", "watch"] {
            guard let w = fields[key]?.words.first else {
                error(.missingReportField(panel: item.keyword, field: key), item.keywordRange)
                ok = false
                continue
            }
            if let t = reportSeries(w.0, w.1) { named.append((w.0, t, w.1)) } else { ok = false }
        }
        var unit = named.first?.1.unit
        if let u = fields["unit"]?.words.first {
            if let mu = reportUnit(u) { unit = mu } else { ok = false; unit = nil }
        }
        if let unit { for (n, t, r) in named { ok = reportFits(n, t, r, unit) && ok } }
        let rule = fields["provisional"]?.words.first
        if let rule { ok = reportAlert(rule.0, rule.1, alerts: alerts) && ok }
        guard ok, named.count == 2, let unit else { return nil }
        return .init(title: fields["title"]?.words.first?.0, clinic: named[0].0, watch: named[1].0, provisionalRule: rule?.0, unit: unit)
    }

    /// A series the report names: a top-level `series` (not a metric, not a `let`).
    mutating func reportSeries(_ name: String, _ r: SourceRange) -> Typed? {
        guard seriesSyntax[name] != nil else {
            let s = suggestion(for: name, among: seriesSyntax.keys)
            error(.unknownReportSeries(name), r, fixIts: didYouMean(s, at: r))
            return nil
        }
        return resolveSeries(name)?.1  // a series with errors was reported where it is defined
    }

    mutating func reportUnit(_ u: (String, SourceRange)) -> MeasureUnit? {
        if let mu = MeasureUnit.rule(u.0) { return mu }
        let s = suggestion(for: u.0, among: MeasureUnit.ruleUnits.keys.sorted())
        error(.unknownUnit(u.0), u.1, fixIts: didYouMean(s, at: u.1))
        return nil
    }

    /// Whether a series can be shown in a unit (same dimension); reported if not.
    mutating func reportFits(_ name: String, _ t: Typed, _ r: SourceRange, _ unit: MeasureUnit) -> Bool {
        guard t.type != .number(unit.dimension) else { return true }
        error(.reportUnitMismatch(series: name, type: describe(t.type), unit: unit.symbol), r)
        return false
    }

    mutating func reportAlert(_ name: String, _ r: SourceRange, alerts: Set<String>) -> Bool {
        guard !alerts.contains(name) else { return true }
        let s = suggestion(for: name, among: alerts)
        error(.unknownAlert(name), r, fixIts: didYouMean(s, at: r))
        return false
    }
}
