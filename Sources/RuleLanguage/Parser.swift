/// Parses tokens into a ``SyntaxFile``, recovering after errors so that one run reports them all.
///
/// Recovery: a bad top-level item skips to the next `series`/`alert`/`event`/`annotation`
/// keyword; a bad clause skips to the next clause keyword or the closing brace.
package struct Parser {
    var tokens: [Token]
    var p = 0
    let file: Int
    /// Diagnostics from lexing and parsing (at most ``RuleLimits/maxDiagnosticsPerFile``).
    package private(set) var diagnostics: [Diagnostic]
    /// Diagnostics found past the cap (lexer's included), not kept.
    package private(set) var dropped = 0
    /// Current nesting of parentheses, calls and unary operators (bounded by ``RuleLimits/maxNesting``).
    var nesting = 0
    /// Operators and calls in the expression being parsed (bounded by ``RuleLimits/maxOperators``).
    var operators = 0

    static let topKeywords: Set<String> = ["series", "alert", "event", "annotation", "report"]
    /// Items of a `report` block.
    package static let reportItems: Set<String> = ["walking_speed", "double_support", "six_minute_walk", "condition", "explain"]
    /// Fields of a trend panel (`walking_speed`, `double_support`).
    package static let trendFields: Set<String> = ["title", "daily", "smoothed", "baseline", "unit"]
    /// Fields of the `six_minute_walk` panel.
    package static let walkFields: Set<String> = ["title", "clinic", "watch", "provisional", "unit"]
    /// Keywords that start a clause inside an alert block.
    package static let clauseKeywords: Set<String> = [
        "on", "let", "when", "during", "for", "keep_firing_for", "repeat", "cooldown",
        "severity", "labels", "headline", "details", "summary", "inhibited_by"
    ]

    /// Lexes and parses a source file.
    package static func parse(_ source: SourceFile, file: Int) -> (SyntaxFile, [Diagnostic]) {
        let (f, d, _) = parseCounting(source, file: file)
        return (f, d)
    }

    /// Lexes and parses a source file; also returns how many diagnostics were past the cap.
    package static func parseCounting(_ source: SourceFile, file: Int) -> (SyntaxFile, [Diagnostic], dropped: Int) {
        var lexer = Lexer(source, file: file)
        let tokens = lexer.tokenize()
        var parser = Parser(tokens: tokens, file: file, diagnostics: lexer.diagnostics)
        parser.dropped = lexer.dropped
        let f = parser.parseFile()
        return (f, parser.diagnostics, parser.dropped)
    }

    init(tokens: [Token], file: Int, diagnostics: [Diagnostic]) {
        self.tokens = tokens
        self.file = file
        self.diagnostics = diagnostics
    }

    var tok: Token { tokens[p] }
    func r(_ t: Token) -> SourceRange { SourceRange(file: file, t.range) }
    func isWord(_ w: String) -> Bool { tok.kind == .identifier && tok.text == w }
    func isPunct(_ s: String) -> Bool { tok.kind == .punct && tok.text == s }
    mutating func advance() -> Token { let t = tok; if t.kind != .eof { p += 1 }; return t }

    func describe(_ t: Token) -> String {
        switch t.kind {
        case .eof: "end of file"
        case .string: "string \"\(t.text.prefix(20))\""
        case .unit: "unit '\(t.text)'"
        default: "'\(t.text)'"
        }
    }

    mutating func error(_ message: RuleMessage, _ range: SourceRange, notes: [Note] = [], fixIts: [FixIt] = []) {
        // One diagnostic per position: cascades after recovery add noise, not information.
        if let last = diagnostics.last, last.range == range { return }
        guard diagnostics.count < RuleLimits.maxDiagnosticsPerFile else { dropped += 1; return }
        diagnostics.append(Diagnostic(message, at: range, notes: notes, fixIts: fixIts))
    }

    /// A "did you mean" fix-it for the current token, if it is a name close to one of `candidates`.
    func didYouMean(among candidates: some Sequence<String>) -> [FixIt] {
        guard tok.kind == .identifier, let s = suggestion(for: tok.text, among: candidates) else { return [] }
        return [FixIt(replacement: s, range: r(tok))]
    }

    mutating func expectPunct(_ s: String, after what: String) -> Bool {
        if isPunct(s) { _ = advance(); return true }
        error(.expectedToken(what: "'\(s)' after \(what)", found: describe(tok)), r(tok))
        return false
    }

    mutating func expectIdent(_ what: String) -> Token? {
        if tok.kind == .identifier { return advance() }
        error(.expectedToken(what: what, found: describe(tok)), r(tok))
        return nil
    }

    mutating func parseFile() -> SyntaxFile {
        var decls: [SyntaxDecl] = []
        while tok.kind != .eof {
            let before = p
            var parsed: SyntaxDecl?
            if isWord("series") {
                parsed = parseSeries()
            } else if isWord("alert") {
                parsed = parseAlert()
            } else if isWord("event") || isWord("annotation") {
                parsed = parseKinds()
            } else if isWord("report") {
                parsed = parseReport()
            } else {
                error(.expectedTopLevel(found: describe(tok)), r(tok), fixIts: didYouMean(among: Parser.topKeywords))
                _ = advance()
            }
            if let parsed {
                decls.append(parsed)
            } else {
                if p == before { _ = advance() }
                syncTop()
            }
        }
        return SyntaxFile(file: file, decls: decls)
    }

    mutating func syncTop() {
        while tok.kind != .eof, !(tok.kind == .identifier && Parser.topKeywords.contains(tok.text)) { _ = advance() }
    }

    mutating func parseSeries() -> SyntaxDecl? {
        let kw = advance()
        guard let name = expectIdent("a series name after 'series'") else { return nil }
        guard expectPunct("=", after: "the series name") else { return nil }
        let e = parseExpr()
        return .series(name: name.text, nameRange: r(name), expr: e, range: r(kw).union(e.range))
    }

    mutating func parseKinds() -> SyntaxDecl? {
        let kw = advance()
        guard isWord("kinds") else {
            error(.expectedToken(what: "'kinds' after '\(kw.text)'", found: describe(tok)), r(tok))
            return nil
        }
        _ = advance()
        var names: [String] = []
        var last = r(kw)
        repeat {
            guard let n = expectIdent("a kind name") else { break }
            names.append(n.text)
            last = r(n)
            if isPunct(",") { _ = advance() } else { break }
        } while true
        return .kinds(category: kw.text, names: names, range: r(kw).union(last))
    }

    mutating func parseAlert() -> SyntaxDecl? {
        let kw = advance()
        guard let name = expectIdent("an alert name after 'alert'") else { return nil }
        guard expectPunct("{", after: "the alert name") else { return nil }
        var clauses: [SyntaxClause] = []
        while !isPunct("}") && tok.kind != .eof {
            if tok.kind == .identifier, Parser.topKeywords.contains(tok.text), tok.text != "event" {
                error(.expectedToken(what: "'}' to close alert '\(name.text)'", found: describe(tok)), r(tok))
                return .alert(name: name.text, nameRange: r(name), clauses: clauses, range: r(kw).union(r(tok)))
            }
            let before = p
            if let c = parseClause() { clauses.append(c) }
            if p == before { _ = advance() }
            // Recover: skip to the next clause keyword or the end of the block.
            var reported = false
            while !isPunct("}"), tok.kind != .eof,
                !(tok.kind == .identifier && (Parser.clauseKeywords.contains(tok.text) || Parser.topKeywords.contains(tok.text)))
            {
                if !reported {
                    error(.unexpectedInAlert(found: describe(tok), alert: name.text), r(tok), fixIts: didYouMean(among: Parser.clauseKeywords))
                    reported = true
                }
                _ = advance()
            }
        }
        let end = tok
        if !expectPunct("}", after: "the clauses of alert '\(name.text)'") {
            return .alert(name: name.text, nameRange: r(name), clauses: clauses, range: r(kw).union(r(end)))
        }
        return .alert(name: name.text, nameRange: r(name), clauses: clauses, range: r(kw).union(r(end)))
    }

    mutating func parseClause() -> SyntaxClause? {
        guard tok.kind == .identifier, Parser.clauseKeywords.contains(tok.text) else {
            error(.expectedClause(found: describe(tok)), r(tok), fixIts: didYouMean(among: Parser.clauseKeywords))
            _ = advance()
            return nil
        }
        let kw = advance()
        var c = SyntaxClause(keyword: kw.text, keywordRange: r(kw), name: nil, nameRange: nil, expr: nil, words: [], pairs: [])
        switch kw.text {
        case "on":
            guard let what = expectIdent("'day' or 'sample' after 'on'") else { return nil }
            c.words.append((what.text, r(what)))
            if what.text == "sample" {
                guard let m = expectIdent("a sample type after 'on sample'") else { return nil }
                c.name = m.text
                c.nameRange = r(m)
                if isWord("where") {
                    _ = advance()
                    c.expr = parseExpr()
                }
            }
        case "let":
            guard let n = expectIdent("a name after 'let'") else { return nil }
            c.name = n.text
            c.nameRange = r(n)
            guard expectPunct("=", after: "'let \(n.text)'") else { return nil }
            c.expr = parseExpr()
        case "when", "during", "for", "keep_firing_for", "repeat", "cooldown":
            c.expr = parseExpr()
        case "severity":
            guard let w = expectIdent("info, warning or critical after 'severity'") else { return nil }
            c.words.append((w.text, r(w)))
        case "headline":
            // `headline "…"` (firing and reminders) or `headline resolved "…"` and the like
            if tok.kind == .identifier {
                guard TransitionKind(rawValue: tok.text) != nil else {
                    error(
                        .expectedToken(what: "firing, repeat, resolved, expired or a string after 'headline'", found: describe(tok)), r(tok),
                        fixIts: didYouMean(among: TransitionKind.allCases.map(\.rawValue)))
                    return nil
                }
                let k = advance()
                c.name = k.text
                c.nameRange = r(k)
            }
            guard tok.kind == .string else {
                error(.expectedToken(what: "a string after '\(c.name.map { "headline " + $0 } ?? "headline")'", found: describe(tok)), r(tok))
                return nil
            }
            let s = advance()
            c.words.append((s.text, r(s)))
        case "details", "summary":
            guard tok.kind == .string else {
                error(.expectedToken(what: "a string after '\(kw.text)'", found: describe(tok)), r(tok))
                return nil
            }
            let s = advance()
            c.words.append((s.text, r(s)))
        case "inhibited_by":
            repeat {
                guard let w = expectIdent("an alert name after 'inhibited_by'") else { return nil }
                c.words.append((w.text, r(w)))
                if isPunct(",") { _ = advance() } else { break }
            } while true
        case "labels":
            guard expectPunct("{", after: "'labels'") else { return nil }
            while !isPunct("}") && tok.kind != .eof {
                guard let k = expectIdent("a label name") else { break }
                guard expectPunct("=", after: "label '\(k.text)'") else { break }
                guard tok.kind == .string else {
                    error(.expectedToken(what: "a string value for label '\(k.text)'", found: describe(tok)), r(tok))
                    break
                }
                let v = advance()
                c.pairs.append((k.text, v.text, r(k).union(r(v))))
                if isPunct(",") { _ = advance() }
            }
            if !expectPunct("}", after: "the labels") { return c }
        default: break
        }
        return c
    }

    // MARK: Expressions

    /// Parses an expression. At the outermost level it starts the operator count of a new expression.
    mutating func parseExpr() -> SyntaxExpr {
        if nesting == 0 { operators = 0 }
        return parseOr()
    }

    /// Enters one more level of nesting at `t`; false (reported, rest of the expression skipped)
    /// past ``RuleLimits/maxNesting``. The caller returns `.error` then, and calls ``leave()`` either way.
    /// `closing`: after an opening parenthesis, whose `)` is skipped too.
    mutating func enter(_ t: Token, closing: Bool = false) -> Bool {
        nesting += 1
        guard nesting <= RuleLimits.maxNesting else {
            error(.nestingTooDeepInSource(limit: RuleLimits.maxNesting), r(t), notes: [Note(message: .eachLevelCounts)])
            skipExpression(closing: closing)
            return false
        }
        return true
    }

    mutating func leave() { nesting -= 1 }

    /// Counts one operator or call at `t`; false (reported once, rest of the expression skipped)
    /// past ``RuleLimits/maxOperators``.
    mutating func countOperator(_ t: Token, closing: Bool = false) -> Bool {
        operators += 1
        guard operators <= RuleLimits.maxOperators else {
            if operators == RuleLimits.maxOperators + 1 {
                error(.expressionTooLong(limit: RuleLimits.maxOperators), r(t), notes: [Note(message: .splitExpression)])
            }
            skipExpression(closing: closing)
            return false
        }
        return true
    }

    /// Skips the rest of the current expression, without recursion: up to a `)`, `,` or `}` that
    /// closes an enclosing level, a clause or top-level keyword, or the end of the file.
    mutating func skipExpression(closing: Bool = false) {
        var balance = closing ? 1 : 0
        while tok.kind != .eof {
            if tok.kind == .punct {
                switch tok.text {
                case "(": balance += 1
                case ")", ",":
                    if tok.text == ")" {
                        if closing && balance == 1 { _ = advance(); return }
                        if balance == 0 { return }
                        balance -= 1
                    } else if balance == 0 {
                        return
                    }
                case "{", "}": return
                default: break
                }
            } else if tok.kind == .identifier, balance <= (closing ? 1 : 0),
                Parser.topKeywords.contains(tok.text) || (Parser.clauseKeywords.contains(tok.text) && tok.text != "on" && tok.text != "repeat")
            {
                return
            }
            _ = advance()
        }
    }

    mutating func parseOr() -> SyntaxExpr {
        var l = parseAnd()
        while isWord("or") {
            let op = advance()
            guard countOperator(op) else { return .error(range: r(op)) }
            let rhs = parseAnd()
            l = .binary("or", l, rhs, opRange: r(op), range: l.range.union(rhs.range))
        }
        return l
    }

    mutating func parseAnd() -> SyntaxExpr {
        var l = parseNot()
        while isWord("and") {
            let op = advance()
            guard countOperator(op) else { return .error(range: r(op)) }
            let rhs = parseNot()
            l = .binary("and", l, rhs, opRange: r(op), range: l.range.union(rhs.range))
        }
        return l
    }

    mutating func parseNot() -> SyntaxExpr {
        if isWord("not") {
            let op = advance()
            defer { leave() }
            guard enter(op), countOperator(op) else { return .error(range: r(op)) }
            let e = parseNot()
            return .unary("not", e, range: r(op).union(e.range))
        }
        return parseComparison()
    }

    static let comparisons: Set<String> = ["<", "<=", ">", ">=", "==", "!="]

    mutating func parseComparison() -> SyntaxExpr {
        let l = parseAdditive()
        guard tok.kind == .punct, Parser.comparisons.contains(tok.text) else { return l }
        let op = advance()
        guard countOperator(op) else { return .error(range: r(op)) }
        let rhs = parseAdditive()
        let e = SyntaxExpr.binary(op.text, l, rhs, opRange: r(op), range: l.range.union(rhs.range))
        if tok.kind == .punct, Parser.comparisons.contains(tok.text) {
            error(.chainedComparison, r(tok))
            _ = advance()
            _ = parseAdditive()
        }
        return e
    }

    mutating func parseAdditive() -> SyntaxExpr {
        var l = parseMultiplicative()
        while isPunct("+") || isPunct("-") {
            let op = advance()
            guard countOperator(op) else { return .error(range: r(op)) }
            let rhs = parseMultiplicative()
            l = .binary(op.text, l, rhs, opRange: r(op), range: l.range.union(rhs.range))
        }
        return l
    }

    mutating func parseMultiplicative() -> SyntaxExpr {
        var l = parseUnary()
        while isPunct("*") || isPunct("/") {
            let op = advance()
            guard countOperator(op) else { return .error(range: r(op)) }
            let rhs = parseUnary()
            l = .binary(op.text, l, rhs, opRange: r(op), range: l.range.union(rhs.range))
        }
        return l
    }

    mutating func parseUnary() -> SyntaxExpr {
        if isPunct("-") {
            let op = advance()
            defer { leave() }
            guard enter(op), countOperator(op) else { return .error(range: r(op)) }
            let e = parseUnary()
            return .unary("-", e, range: r(op).union(e.range))
        }
        return parsePrimary()
    }

    mutating func parsePrimary() -> SyntaxExpr {
        let t = tok
        switch t.kind {
        case .number:
            _ = advance()
            if tok.kind == .unit {
                let u = advance()
                return .number(t.number, unit: u.text, range: r(t).union(r(u)), unitRange: r(u))
            }
            return .number(t.number, unit: nil, range: r(t), unitRange: nil)
        case .string:
            _ = advance()
            return .string(t.text, range: r(t))
        case .identifier where t.text == "true" || t.text == "false":
            _ = advance()
            return .bool(t.text == "true", range: r(t))
        case .identifier
        where Parser.clauseKeywords.contains(t.text) && t.text != "on" && t.text != "repeat" || Parser.topKeywords.contains(t.text)
            || ["and", "or", "not"].contains(t.text):
            error(.expectedExpression(found: describe(t)), r(t))
            return .error(range: SourceRange(file: file, t.range.lowerBound..<t.range.lowerBound))
        case .identifier:
            _ = advance()
            guard isPunct("(") else { return .name(t.text, range: r(t)) }
            _ = advance()
            defer { leave() }
            guard enter(t, closing: true), countOperator(t, closing: true) else { return .error(range: r(t)) }
            var args: [SyntaxArgument] = []
            if !isPunct(")") {
                while true {
                    var label: Token?
                    if tok.kind == .identifier, tokens[p + 1].kind == .punct, tokens[p + 1].text == ":" {
                        label = advance()
                        _ = advance()
                    }
                    let v = parseExpr()
                    args.append(SyntaxArgument(label: label?.text, labelRange: label.map(r), value: v))
                    if isPunct(",") { _ = advance(); continue }
                    break
                }
            }
            let close = tok
            if !expectPunct(")", after: "the arguments of '\(t.text)'") {
                return .call(t.text, args: args, nameRange: r(t), range: r(t).union(r(close)))
            }
            return .call(t.text, args: args, nameRange: r(t), range: r(t).union(r(close)))
        case .punct where t.text == "(":
            _ = advance()
            defer { leave() }
            guard enter(t, closing: true) else { return .error(range: r(t)) }
            let e = parseExpr()
            _ = expectPunct(")", after: "the parenthesised expression")
            return e
        case .unit:
            _ = advance()
            error(.unexpectedUnit(t.text), r(t))
            return .error(range: r(t))
        default:
            error(.expectedExpression(found: describe(t)), r(t))
            return .error(range: SourceRange(file: file, t.range.lowerBound..<max(t.range.lowerBound, t.range.upperBound)))
        }
    }
}
