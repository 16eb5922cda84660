import MobilityModel

/// Which transition of an alert a headline is written for.
package enum TransitionKind: String, CaseIterable, Hashable, Sendable {
    /// A new firing instance.
    case firing
    /// A reminder that the instance still fires (`repeat`); its headline is the firing one's
    /// unless the rule gives `headline repeat`.
    case `repeat`
    /// The condition was false on evidence for `keep_firing_for`.
    case resolved
    /// The monitoring window closed while the instance fired (or a reload removed the rule).
    case expired
}

/// A checked text template: a headline or the details of an alert's transitions. Values and
/// choices refer by index to `expressions`, which the engine evaluates on the transition's day.
package struct Template: Hashable, Sendable {
    /// Text and placeholders, in order.
    package var parts: [TemplatePart]
    /// The expressions of the `.value` and `.choice` parts, by their index.
    package var expressions: [Expr]

    package init(parts: [TemplatePart], expressions: [Expr] = []) {
        self.parts = parts
        self.expressions = expressions
    }

    /// A template of fixed text.
    package init(text: String) { self.init(parts: text.isEmpty ? [] : [.text(text)]) }

    /// Whether it renders nothing.
    package var isEmpty: Bool { parts.isEmpty }
}

/// A piece of a template.
package indirect enum TemplatePart: Hashable, Sendable {
    case text(String)
    /// A let or series value (`expressions[index]`), in a unit, with a number of decimals; a
    /// boolean shows as yes/no; `fallback` is shown when the value is unknown (default
    /// ``TemplateText/notEnoughData``).
    case value(index: Int, unit: MeasureUnit, decimals: Int?, isBool: Bool, fallback: String?)
    /// `{c ? 'then' : 'otherwise'}`: `then` when boolean `expressions[index]` is true, else
    /// (false or unknown) `otherwise`. (For a name that is not a boolean the checker stores
    /// `is_known(name)`: `then` when it has a value.)
    case choice(index: Int, then: [TemplatePart], otherwise: [TemplatePart])
    /// The user id, the evaluated day, the rule's name.
    case user, day, rule
    /// The local day the alert instance became active (its condition first held), and the day it fired.
    case since, fired
}

/// How templates write values, and the bounds of a headline: shared by the checker (which
/// bounds a headline's length before any data is seen) and the engine (which renders it).
package enum TemplateText {
    /// The most characters a headline has; longer ones are cut at a word, ending in `…`.
    package static let headlineLimit = 120
    /// What an unknown value without a fallback renders as: what is missing, not "unknown".
    package static let notEnoughData = "not enough data"
    /// The characters a value is budgeted when the checker bounds a headline: a sign and three
    /// integer digits (before its decimals and unit); a date (`{day}`, `{since}`, `{fired}`) is 10,
    /// `{user}` 16.
    static let integerWidth = 4
    static let userWidth = 16

    /// A number with a fixed number of decimals (default 2), without a trailing `.0` when 0 decimals.
    package static func number(_ v: Double, decimals: Int?) -> String {
        let d = decimals ?? 2
        var p = 1.0
        for _ in 0..<d { p *= 10 }
        let r = (v * p).rounded() / p
        var s = r == 0 ? "0" : String(r)
        if s.hasSuffix(".0") { s.removeLast(2) }
        if d > 0 {
            if !s.contains(".") { s += "." }
            let frac = s.count - 1 - s.distance(from: s.startIndex, to: s.firstIndex(of: ".")!)
            if frac < d { s += String(repeating: "0", count: d - frac) }
        }
        if d == 0, s.hasSuffix(".") { s.removeLast() }
        return s
    }

    /// A value (SI) in a unit, as text: the number and the unit, durations in words (`3 days`,
    /// `1 week`), rates per day or week in words (`0.074 m/s a week`), a plain number alone.
    package static func quantity(_ si: Double, unit: MeasureUnit, decimals: Int?) -> String {
        var text = number(unit.fromSI(si), decimals: decimals)
        // A duration without a format is a count of days or weeks: "3 days", not "3.00 days".
        if decimals == nil, words(unit) != nil, text.contains(".") {
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
        }
        let after = unitText(unit, one: Double(text) == 1)
        return after.isEmpty ? text : text + " " + after
    }

    /// What follows a value's number: a duration's word, a rate's unit and "a day"/"a week",
    /// else the symbol (empty for a plain number).
    static func unitText(_ unit: MeasureUnit, one: Bool) -> String {
        if let (singular, plural) = words(unit) { return one ? singular : plural }
        if let (base, per) = rate(unit) { return base + " " + per }
        return unit.symbol
    }

    /// A rate's unit split into the quantity's unit and "a day" or "a week" (`m/s/w`: `m/s`,
    /// `a week`); nil for other units.
    static func rate(_ unit: MeasureUnit) -> (String, String)? {
        let s = unit.symbol
        if s.hasSuffix("/d"), s.count > 2 { return (String(s.dropLast(2)), "a day") }
        if s.hasSuffix("/w"), s.count > 2 { return (String(s.dropLast(2)), "a week") }
        return nil
    }

    /// The words a duration's unit is written in (singular, plural); nil for other units.
    package static func words(_ unit: MeasureUnit) -> (String, String)? {
        guard unit.dimension == .time else { return nil }
        switch unit.symbol {
        case "s": return ("second", "seconds")
        case "min": return ("minute", "minutes")
        case "h": return ("hour", "hours")
        case "d": return ("day", "days")
        case "w": return ("week", "weeks")
        default: return nil
        }
    }

    /// What a value in `unit` shows after its number, for the doubled-unit check: the symbol
    /// and, for durations, the words.
    static func unitSpellings(_ unit: MeasureUnit) -> [String] {
        var all = unit.symbol.isEmpty ? [] : [unit.symbol]
        if let (one, many) = words(unit) { all += [one, many] }
        if let (base, per) = rate(unit) { all += [base, per, per == "a day" ? "per day" : "per week"] }
        return all
    }

    /// A headline cut to ``headlineLimit`` characters at a word, ending in `…`; control
    /// characters (a newline from a text value) become spaces, so it is one line.
    package static func oneLine(_ s: String, limit: Int = headlineLimit) -> String {
        var t = String(s.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7f ? " " : Character($0) })
        guard t.count > limit else { return t }
        t = String(t.prefix(limit - 1))
        if let space = t.lastIndex(of: " "), t.distance(from: t.startIndex, to: space) >= limit / 2 { t = String(t[..<space]) }
        return t + "…"
    }

    /// A rule's name in words: `stalled_recovery` → `Stalled recovery`.
    package static func ruleWords(_ name: String) -> String {
        let spaced = name.replacingOccurrences(of: "_", with: " ")
        return spaced.prefix(1).uppercased() + spaced.dropFirst()
    }

    /// The headline a rule without one for `kind` shows: its name in words and what happened,
    /// in plain words (the checker warns, `missing-headline`, when a rule has no headline at all).
    package static func defaultHeadline(rule: String, kind: TransitionKind) -> Template {
        let words = ruleWords(rule)
        switch kind {
        case .firing, .repeat: return Template(parts: [.text(words + " since "), .since])
        case .resolved: return Template(parts: [.text(words + " has stopped (active since "), .since, .text(")")])
        case .expired:
            return Template(parts: [.text(words + ": no longer watched while it still held (active since "), .since, .text(")")])
        }
    }

    /// The most characters `parts` can render with values of nominal width (see
    /// ``integerWidth``): the checker's bound on a headline.
    static func nominalWidth(_ parts: [TemplatePart], rule: String) -> Int {
        parts.reduce(0) { n, p in
            switch p {
            case .text(let t): return n + t.count
            case .value(_, let unit, let decimals, let isBool, let fallback):
                let d = decimals ?? 2
                var w = isBool ? 3 : integerWidth + (d > 0 ? d + 1 : 0)
                let after = unitText(unit, one: false)
                if !isBool, !after.isEmpty { w += 1 + after.count }
                // "not enough data" is not budgeted: a headline's values are mostly those its
                // condition needed known; a rare longer line is cut at the limit.
                return n + max(w, fallback?.count ?? 0)
            case .choice(_, let a, let b): return n + max(nominalWidth(a, rule: rule), nominalWidth(b, rule: rule))
            case .user: return n + userWidth
            case .day, .since, .fired: return n + 10
            case .rule: return n + rule.count
            }
        }
    }
}
