import MobilityModel

/// Headline and details templates: `{name}`, `{name in unit:.Nf|fallback}`,
/// `{name ? 'text' : 'text'}` (a boolean true, anything else known; `''` is a quote inside the
/// sides, which may hold placeholders and choices), `{user}`, `{day}`, `{rule}`, `{since}`,
/// `{fired}`, `{{` and `}}`.
extension Checker {
    /// Parses and checks a template (the string literal's text `s`, at `r`); nil after an error.
    /// `what` names it in diagnostics (`headline`, `details`).
    mutating func template(_ s: String, _ r: SourceRange, what: String) -> Template? {
        var expressions: [Expr] = []
        guard let parts = templateParts(Array(s), r, what: what, expressions: &expressions) else { return nil }
        var ok = true
        checkDoubledUnits(parts, r, what: what, ok: &ok)
        return ok ? Template(parts: parts, expressions: expressions) : nil
    }

    /// The parts of template text `chars` (a whole literal, or one side of a choice).
    private mutating func templateParts(_ chars: [Character], _ r: SourceRange, what: String, expressions: inout [Expr]) -> [TemplatePart]? {
        var parts: [TemplatePart] = []
        var text = ""
        var ok = true
        var i = 0
        func next(_ k: Int) -> Character? { k < chars.count ? chars[k] : nil }
        while i < chars.count {
            let c = chars[i]
            if c == "{" && next(i + 1) == "{" { text.append("{"); i += 2; continue }
            if c == "}" && next(i + 1) == "}" { text.append("}"); i += 2; continue }
            if c != "{" { text.append(c); i += 1; continue }
            // The placeholder runs to its matching brace (a choice's sides hold placeholders too).
            var j = i + 1, depth = 1
            while j < chars.count {
                if chars[j] == "{" { depth += 1 } else if chars[j] == "}" { depth -= 1; if depth == 0 { break } }
                j += 1
            }
            guard j < chars.count else {
                error(.unclosedTemplateBrace(in: what), r)
                return nil
            }
            let body = Array(chars[(i + 1)..<j])
            i = j + 1
            if !text.isEmpty { parts.append(.text(text)); text = "" }
            if let choice = splitChoice(body) {
                guard let part = checkChoice(choice, r, what: what, expressions: &expressions) else { ok = false; continue }
                parts.append(part)
            } else if let q = body.firstIndex(of: "?"), body.firstIndex(of: "|").map({ q < $0 }) ?? true {
                error(.malformedChoice(in: what), r)
                ok = false
            } else if let part = checkValue(String(body), r, what: what, expressions: &expressions) {
                parts.append(part)
            } else {
                ok = false
            }
        }
        if !text.isEmpty { parts.append(.text(text)) }
        return ok ? parts : nil
    }

    /// `NAME ? 'then' : 'otherwise'` split into its three pieces; nil when `body` is not of that shape.
    private func splitChoice(_ body: [Character]) -> (name: String, then: [Character], otherwise: [Character])? {
        guard let q = body.firstIndex(of: "?"), body.firstIndex(of: "|").map({ q < $0 }) ?? true else { return nil }
        let name = String(body[..<q]).trimmingCharacters(in: .whitespaces)
        var k = q + 1
        func skipSpaces() { while k < body.count, body[k] == " " { k += 1 } }
        // A side runs to the next quote outside its own placeholders; `''` is a quote in it.
        func quoted() -> [Character]? {
            skipSpaces()
            guard k < body.count, body[k] == "'" else { return nil }
            var side: [Character] = []
            var depth = 0
            k += 1
            while k < body.count {
                let c = body[k]
                if c == "{" { depth += 1 } else if c == "}" { depth -= 1 }
                if c == "'", depth == 0 {
                    if k + 1 < body.count, body[k + 1] == "'" {
                        side.append("'")
                        k += 2
                        continue
                    }
                    k += 1
                    return side
                }
                side.append(c)
                k += 1
            }
            return nil
        }
        guard !name.isEmpty, let a = quoted() else { return nil }
        skipSpaces()
        guard k < body.count, body[k] == ":" else { return nil }
        k += 1
        guard let b = quoted() else { return nil }
        skipSpaces()
        return k == body.count ? (name, a, b) : nil
    }

    private mutating func checkChoice(
        _ choice: (name: String, then: [Character], otherwise: [Character]), _ r: SourceRange, what: String, expressions: inout [Expr]
    ) -> TemplatePart? {
        guard let t = templateName(choice.name, r, what: what) else { return nil }
        let index = expressions.count
        expressions.append(t.type == .bool ? t.expr : .isKnown(t.expr))
        guard let a = templateParts(choice.then, r, what: what, expressions: &expressions),
            let b = templateParts(choice.otherwise, r, what: what, expressions: &expressions)
        else { return nil }
        return .choice(index: index, then: a, otherwise: b)
    }

    /// `NAME [in UNIT] [:.Nf] [|fallback]`, or one of the fixed names.
    private mutating func checkValue(_ body: String, _ r: SourceRange, what: String, expressions: inout [Expr]) -> TemplatePart? {
        var spec = body
        var fallback: String?
        if let bar = spec.firstIndex(of: "|") {
            fallback = String(spec[spec.index(after: bar)...]).trimmingCharacters(in: .whitespaces)
            spec = String(spec[..<bar])
        }
        spec = spec.trimmingCharacters(in: .whitespaces)
        var decimals: Int?
        if let colon = spec.lastIndex(of: ":") {
            let fmt = spec[spec.index(after: colon)...]
            spec = String(spec[..<colon]).trimmingCharacters(in: .whitespaces)
            guard fmt.hasPrefix("."), fmt.hasSuffix("f"), let d = Int(fmt.dropFirst().dropLast()), (0...6).contains(d) else {
                error(.invalidTemplateFormat(String(fmt), in: what), r)
                return nil
            }
            decimals = d
        }
        var unitName: String?
        if let inRange = spec.range(of: " in ") {
            unitName = String(spec[inRange.upperBound...]).trimmingCharacters(in: .whitespaces)
            spec = String(spec[..<inRange.lowerBound]).trimmingCharacters(in: .whitespaces)
        }
        if unitName == nil, decimals == nil, fallback == nil {
            switch spec {
            case "user": return .user
            case "day": return .day
            case "rule": return .rule
            case "since": return .since
            case "fired": return .fired
            default: break
            }
        }
        guard let t = templateName(spec, r, what: what) else { return nil }
        var unit = t.unit
        if let un = unitName {
            guard let u = MeasureUnit.rule(un) else {
                error(.unknownTemplateUnit(un, in: what), r)
                return nil
            }
            guard case .number(let dim) = t.type, dim == u.dimension else {
                error(.templateUnitMismatch(name: spec, type: "\(t.type)", unit: un), r)
                return nil
            }
            unit = u
        }
        expressions.append(t.expr)
        return .value(index: expressions.count - 1, unit: unit, decimals: decimals, isBool: t.type == .bool, fallback: fallback)
    }

    /// A `let` (marked used) or series a template names, with its type and unit; nil (reported) otherwise.
    private mutating func templateName(_ name: String, _ r: SourceRange, what: String) -> Typed? {
        if let (idx, lt) = locals[name] {
            usedLocals.insert(name)
            return Typed(expr: .local(idx), type: lt.type, unit: lt.unit)
        }
        if seriesSyntax[name] != nil, let (idx, st) = resolveSeries(name) {
            return Typed(expr: .series(idx), type: st.type, unit: st.unit)
        }
        let s = suggestion(for: name, among: Array(locals.keys) + Array(seriesSyntax.keys) + ["user", "day", "rule", "since", "fired"])
        if let s, let at = placeholder(name, in: r) {
            error(.unknownTemplateName(name, in: what), r, fixIts: didYouMean(s, at: at))
        } else {
            error(.unknownTemplateName(name, in: what), r, notes: s.map { [Note(message: .didYouMean($0))] } ?? [])
        }
        return nil
    }

    /// A value followed by its own unit in the text (`{missing in d:.0f} days` renders
    /// "3 days days"): an error, since the value already shows it.
    private mutating func checkDoubledUnits(_ parts: [TemplatePart], _ r: SourceRange, what: String, ok: inout Bool) {
        for (k, p) in parts.enumerated() {
            if case .choice(_, let a, let b) = p {
                checkDoubledUnits(a, r, what: what, ok: &ok)
                checkDoubledUnits(b, r, what: what, ok: &ok)
            }
            guard case .value(_, let unit, _, false, _) = p, k + 1 < parts.count, case .text(let t) = parts[k + 1] else { continue }
            let after = t.drop { $0 == " " }
            for spelling in TemplateText.unitSpellings(unit) where after.hasPrefix(spelling) {
                let rest = after.dropFirst(spelling.count)
                if let c = rest.first, c.isLetter || c == "/" { continue }  // `m` before `more`, `m` before `m/s`
                error(.doubledUnit(unit: spelling, in: what), r)
                ok = false
                break
            }
        }
    }

    /// The source range of a `{name…}` placeholder's name inside the template literal at `r`,
    /// for a fix-it that replaces just the name; nil if it cannot be found verbatim.
    func placeholder(_ name: String, in r: SourceRange) -> SourceRange? {
        let bytes = sources[r.file].bytes, n = Array(name.utf8)
        guard !n.isEmpty, r.range.upperBound <= bytes.count else { return nil }
        var i = r.range.lowerBound
        while i + n.count <= r.range.upperBound {
            if Array(bytes[i..<(i + n.count)]) == n {
                var j = i - 1
                while j >= r.range.lowerBound, bytes[j] == 32 { j -= 1 }
                if j >= r.range.lowerBound, bytes[j] == 123 { return SourceRange(file: r.file, i..<(i + n.count)) }
            }
            i += 1
        }
        return nil
    }
}
