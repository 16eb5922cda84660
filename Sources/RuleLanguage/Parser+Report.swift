/// The `report { … }` block: which series feed the weekly care-team report.
///
/// ```
/// report {
///   walking_speed { daily speed_p95  smoothed speed_7d  baseline 30 d before injury  unit mph }
///   condition source device = speed_device_samples
///   explain gait_quality_explanation
/// }
/// ```
/// Recovery as in alerts: a bad item or field skips to the next keyword of its block or its `}`.
extension Parser {
    mutating func parseReport() -> SyntaxDecl? {
        let kw = advance()
        guard expectPunct("{", after: "'report'") else { return nil }
        var items: [SyntaxReportItem] = []
        while !isPunct("}") && tok.kind != .eof {
            if tok.kind == .identifier, Parser.topKeywords.contains(tok.text), !Parser.reportItems.contains(tok.text) {
                error(.expectedToken(what: "'}' to close the report", found: describe(tok)), r(tok))
                return .report(items: items, keywordRange: r(kw), range: r(kw).union(r(tok)))
            }
            let before = p
            if let item = parseReportItem() { items.append(item) }
            if p == before { _ = advance() }
            skipInReport(to: Parser.reportItems, block: "the report")
        }
        let end = tok
        _ = expectPunct("}", after: "the items of the report")
        return .report(items: items, keywordRange: r(kw), range: r(kw).union(r(end)))
    }

    /// Skips to the next keyword of the block, its `}`, a top-level keyword or the end, reporting
    /// what it skips once.
    mutating func skipInReport(to keywords: Set<String>, block: String) {
        var reported = false
        while !isPunct("}"), tok.kind != .eof, !(tok.kind == .identifier && (keywords.contains(tok.text) || Parser.topKeywords.contains(tok.text))) {
            if !reported {
                error(.unexpectedInReport(found: describe(tok), block: block), r(tok), fixIts: didYouMean(among: keywords))
                reported = true
            }
            _ = advance()
        }
    }

    mutating func parseReportItem() -> SyntaxReportItem? {
        guard tok.kind == .identifier, Parser.reportItems.contains(tok.text) else {
            error(.unexpectedInReport(found: describe(tok), block: "the report"), r(tok), fixIts: didYouMean(among: Parser.reportItems))
            _ = advance()
            return nil
        }
        let kw = advance()
        var item = SyntaxReportItem(keyword: kw.text, keywordRange: r(kw), words: [], expr: nil, fields: [])
        switch kw.text {
        case "condition":
            guard let group = expectIdent("a group name after 'condition', such as source") else { return nil }
            item.words.append((group.text, r(group)))
            guard tok.kind == .identifier || tok.kind == .string else {
                error(.expectedToken(what: "a label after the group '\(group.text)'", found: describe(tok)), r(tok))
                return nil
            }
            let label = advance()
            item.words.append((label.text, r(label)))
            guard expectPunct("=", after: "the condition's label") else { return nil }
            guard let series = expectIdent("a count series after '='") else { return nil }
            item.words.append((series.text, r(series)))
        case "explain":
            repeat {
                guard let w = expectIdent("an alert name after 'explain'") else { return nil }
                item.words.append((w.text, r(w)))
                if isPunct(",") { _ = advance() } else { break }
            } while true
        default:
            let fields = kw.text == "six_minute_walk" ? Parser.walkFields : Parser.trendFields
            guard expectPunct("{", after: "'\(kw.text)'") else { return nil }
            while !isPunct("}") && tok.kind != .eof {
                if tok.kind == .identifier, Parser.topKeywords.contains(tok.text) || Parser.reportItems.contains(tok.text) { break }
                let before = p
                if let f = parseReportField(fields, panel: kw.text) { item.fields.append(f) }
                if p == before { _ = advance() }
                skipInReport(to: fields.union(Parser.reportItems), block: "'\(kw.text)'")
            }
            _ = expectPunct("}", after: "the fields of '\(kw.text)'")
        }
        return item
    }

    mutating func parseReportField(_ fields: Set<String>, panel: String) -> SyntaxReportItem? {
        guard tok.kind == .identifier, fields.contains(tok.text) else {
            error(.unexpectedInReport(found: describe(tok), block: "'\(panel)'"), r(tok), fixIts: didYouMean(among: fields))
            _ = advance()
            return nil
        }
        let kw = advance()
        var f = SyntaxReportItem(keyword: kw.text, keywordRange: r(kw), words: [], expr: nil, fields: [])
        switch kw.text {
        case "title":
            guard tok.kind == .string else {
                error(.expectedToken(what: "a string after 'title'", found: describe(tok)), r(tok))
                return nil
            }
            let s = advance()
            f.words.append((s.text, r(s)))
        case "baseline":
            f.expr = parseExpr()
            if isWord("before") {
                _ = advance()
                guard let k = expectIdent("a clinical event kind after 'before'") else { return nil }
                f.words.append((k.text, r(k)))
            }
        case "unit":
            guard let u = unitWord() else {
                error(.expectedToken(what: "a unit such as mph, m/s or % after 'unit'", found: describe(tok)), r(tok))
                return nil
            }
            f.words.append(u)
        default:
            guard let n = expectIdent("\(kw.text == "provisional" ? "an alert" : "a series") name after '\(kw.text)'") else { return nil }
            f.words.append((n.text, r(n)))
        }
        return f
    }

    /// A unit written alone (`mph`, `m/s`, `%`, `ml/(kg*min)`): adjacent tokens, no space between.
    mutating func unitWord() -> (String, SourceRange)? {
        let unitPunct: Set<String> = ["/", "(", ")", "*", "%"]
        guard tok.kind == .identifier || (tok.kind == .punct && tok.text == "%") else { return nil }
        var text = "", range = r(tok), end = tok.range.upperBound
        text = advance().text
        while tok.range.lowerBound == end, tok.kind == .identifier || (tok.kind == .punct && unitPunct.contains(tok.text)) {
            range = range.union(r(tok))
            end = tok.range.upperBound
            text += advance().text
        }
        return (text, range)
    }
}
