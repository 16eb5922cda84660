/// The syntax tree of a rule file, as parsed (unchecked).
package indirect enum SyntaxExpr: Hashable, Sendable {
    case number(Double, unit: String?, range: SourceRange, unitRange: SourceRange?)
    case string(String, range: SourceRange)
    case bool(Bool, range: SourceRange)
    case name(String, range: SourceRange)
    case call(String, args: [SyntaxArgument], nameRange: SourceRange, range: SourceRange)
    case unary(String, SyntaxExpr, range: SourceRange)
    case binary(String, SyntaxExpr, SyntaxExpr, opRange: SourceRange, range: SourceRange)
    /// Stands in for an expression that failed to parse (a diagnostic was already emitted).
    case error(range: SourceRange)

    /// The source range of the whole expression.
    package var range: SourceRange {
        switch self {
        case .number(_, _, let r, _), .string(_, let r), .bool(_, let r), .name(_, let r), .call(_, _, _, let r),
            .unary(_, _, let r), .binary(_, _, _, _, let r), .error(let r):
            r
        }
    }
}

/// A function-call argument, positional or named (`min: 4`).
package struct SyntaxArgument: Hashable, Sendable {
    /// The label, for named arguments.
    package var label: String?
    /// Where the label is.
    package var labelRange: SourceRange?
    /// The value.
    package var value: SyntaxExpr
}

/// One clause inside an `alert { … }` block.
package struct SyntaxClause: Hashable, Sendable {
    /// The clause keyword (`when`, `for`, `let`…).
    package var keyword: String
    /// Where the keyword is.
    package var keywordRange: SourceRange
    /// The name for `let NAME = …` and `on sample NAME`; the kind of `headline KIND "…"`.
    package var name: String?
    /// Where the name is.
    package var nameRange: SourceRange?
    /// The expression, for clauses that take one.
    package var expr: SyntaxExpr?
    /// String or identifier arguments (`severity warning`, `headline "…"`, `details "…"`, `inhibited_by a, b`, labels).
    package var words: [(String, SourceRange)]
    /// `labels { k = "v" }` pairs.
    package var pairs: [(key: String, value: String, range: SourceRange)]

    /// Equal when keyword, position, name, expression, words and pairs are equal (the ranges of words and pairs are not compared).
    package static func == (a: SyntaxClause, b: SyntaxClause) -> Bool {
        a.keyword == b.keyword && a.keywordRange == b.keywordRange && a.name == b.name && a.expr == b.expr
            && a.words.map(\.0) == b.words.map(\.0) && a.pairs.map(\.key) == b.pairs.map(\.key) && a.pairs.map(\.value) == b.pairs.map(\.value)
    }

    /// Hashes the keyword, its position and the expression (consistent with `==`).
    package func hash(into h: inout Hasher) { h.combine(keyword); h.combine(keywordRange); h.combine(expr) }
}

/// A top-level declaration.
package enum SyntaxDecl: Hashable, Sendable {
    /// `series NAME = expr`: a recording rule.
    case series(name: String, nameRange: SourceRange, expr: SyntaxExpr, range: SourceRange)
    /// `alert NAME { clauses }`.
    case alert(name: String, nameRange: SourceRange, clauses: [SyntaxClause], range: SourceRange)
    /// `event kinds a, b` / `annotation kinds a, b`: extends the vocabulary of timeline kinds.
    case kinds(category: String, names: [String], range: SourceRange)
    /// `report { items }`: which series feed the weekly care-team report.
    case report(items: [SyntaxReportItem], keywordRange: SourceRange, range: SourceRange)
}

/// One item of a `report { … }` block (`walking_speed { … }`, `condition …`, `explain …`) or one
/// field of a panel (`daily speed_p95`, `baseline 30 d before injury`, `unit mph`).
package struct SyntaxReportItem: Hashable, Sendable {
    /// The keyword (`walking_speed`, `daily`, `condition`…).
    package var keyword: String
    /// Where the keyword is.
    package var keywordRange: SourceRange
    /// Names, strings and units after the keyword, in order (`condition source device = s`: source,
    /// device, s; `baseline 30 d before injury`: injury; `unit m/s`: m/s).
    package var words: [(String, SourceRange)]
    /// The expression, for `baseline`.
    package var expr: SyntaxExpr?
    /// A panel's fields.
    package var fields: [SyntaxReportItem]

    /// Equal when keyword, position, words, expression and fields are equal (the ranges of the words are not compared).
    package static func == (a: SyntaxReportItem, b: SyntaxReportItem) -> Bool {
        a.keyword == b.keyword && a.keywordRange == b.keywordRange && a.words.map(\.0) == b.words.map(\.0) && a.expr == b.expr && a.fields == b.fields
    }

    /// Hashes the keyword, its position and the expression (consistent with `==`).
    package func hash(into h: inout Hasher) { h.combine(keyword); h.combine(keywordRange); h.combine(expr) }
}

/// A parsed file.
package struct SyntaxFile: Sendable {
    /// Index of the file.
    package var file: Int
    /// Declarations in source order.
    package var decls: [SyntaxDecl]
}
