/// How serious a diagnostic is.
public enum DiagnosticSeverity: String, Hashable, Sendable {
    case error, warning, note
}

/// A problem found in rule source: stable id, one-line message, where, and notes.
public struct Diagnostic: Hashable, Sendable {
    /// Error or warning.
    public var severity: DiagnosticSeverity
    /// The stable identifier (documented in `docs/rule-language.md`).
    public var id: DiagnosticID
    /// A lower-case, one-line message without a trailing period.
    public var message: String
    /// Where.
    public var range: SourceRange
    /// Further explanations (`did you mean 'walkingSpeed'?`).
    public var notes: [String]

    /// Creates a diagnostic.
    public init(_ id: DiagnosticID, _ message: String, at range: SourceRange, severity: DiagnosticSeverity = .error, notes: [String] = []) {
        self.severity = severity
        self.id = id
        self.message = message
        self.range = range
        self.notes = notes
    }
}

/// The catalogue of diagnostic ids, alphabetical. Each is stable and documented.
public enum DiagnosticID: String, CaseIterable, Hashable, Sendable {
    case argumentMismatch = "argument-mismatch"
    case duplicateClause = "duplicate-clause"
    case duplicateName = "duplicate-name"
    case expectedExpression = "expected-expression"
    case expectedToken = "expected-token"
    case expressionTooLong = "expression-too-long"
    case fileTooLarge = "file-too-large"
    case inhibitionCycle = "inhibition-cycle"
    case invalidDuration = "invalid-duration"
    case invalidNumber = "invalid-number"
    case invalidTemplate = "invalid-template"
    case missingWhen = "missing-when"
    case nestingTooDeep = "nesting-too-deep"
    case recursiveDefinition = "recursive-definition"
    case ruleTooCostly = "rule-too-costly"
    case sampleContext = "sample-context"
    case tooManyDiagnostics = "too-many-diagnostics"
    case typeMismatch = "type-mismatch"
    case undefinedName = "undefined-name"
    case unexpectedCharacter = "unexpected-character"
    case unexpectedToken = "unexpected-token"
    case unitMismatch = "unit-mismatch"
    case unknownArgument = "unknown-argument"
    case unknownFunction = "unknown-function"
    case unknownUnit = "unknown-unit"
    case unterminatedString = "unterminated-string"
    case unusedDefinition = "unused-definition"
}

/// Renders diagnostics the way compilers do:
/// `rules/recovery.rules:12:17: error: cannot compare speed with number [unit-mismatch]`, the
/// source line, and a caret under the column.
public struct DiagnosticRenderer: Sendable {
    /// Source files by index.
    public let files: [SourceFile]
    /// Whether to colour the output (only on a terminal).
    public var colour: Bool

    /// Longer source lines are shown as an excerpt of this many characters around the column.
    public static let maxLineWidth = 160

    /// Creates a renderer.
    public init(files: [SourceFile], colour: Bool = false) {
        self.files = files
        self.colour = colour
    }

    /// The `file:line:col` prefix of a range.
    public func position(_ r: SourceRange) -> String {
        let f = files[r.file]
        let (l, c) = f.location(of: r.range.lowerBound)
        return "\(f.path):\(l):\(c)"
    }

    /// Renders one diagnostic with its source line and caret.
    public func render(_ d: Diagnostic) -> String {
        let f = files[d.range.file]
        let (line, col) = f.location(of: d.range.range.lowerBound)
        let (endLine, endCol) = f.location(of: max(d.range.range.upperBound, d.range.range.lowerBound + 1) - 1)
        let sev = d.severity.rawValue
        let where_ = "\(f.path):\(line):\(col):"
        let tail = "\(d.message) [\(d.id.rawValue)]"
        var head = where_ + " " + sev + ": " + tail
        if colour {
            let sevColour = sev == "error" ? "\u{1B}[31m" : "\u{1B}[35m"
            head = "\u{1B}[1m" + where_ + " " + sevColour + sev + ":\u{1B}[0m\u{1B}[1m " + tail + "\u{1B}[0m"
        }
        var out = head + "\n"
        var text = f.line(line)
        var width = endLine == line ? max(1, endCol - col + 1) : max(1, text.count - col + 1)
        var caretCol = col
        // A long line is shown as an excerpt around the column, so that no diagnostic prints
        // kilobytes of source.
        if text.count > DiagnosticRenderer.maxLineWidth {
            let chars = Array(text)
            let from = max(0, col - 1 - DiagnosticRenderer.maxLineWidth / 4)
            let to = min(chars.count, from + DiagnosticRenderer.maxLineWidth)
            text = (from > 0 ? "…" : "") + String(chars[from..<to]) + (to < chars.count ? "…" : "")
            caretCol = col - from + (from > 0 ? 1 : 0)
            width = min(width, to - (col - 1))
        }
        out += "    " + text + "\n"
        let caretPad = String(text.prefix(caretCol - 1).map { $0 == "\t" ? "\t" : " " })
        out += "    " + caretPad + (colour ? "\u{1B}[32m" : "") + "^" + String(repeating: "~", count: width - 1) + (colour ? "\u{1B}[0m" : "") + "\n"
        for n in d.notes { out += "    note: \(n)\n" }
        return out
    }

    /// Renders many, sorted by file and position.
    public func render(_ ds: [Diagnostic]) -> String {
        ds.sorted { ($0.range.file, $0.range.range.lowerBound) < ($1.range.file, $1.range.range.lowerBound) }.map(render).joined()
    }
}

/// Edit distance, for "did you mean" notes.
func levenshtein(_ a: String, _ b: String) -> Int {
    let a = Array(a.lowercased()), b = Array(b.lowercased())
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var prev = Array(0...b.count), cur = prev
    for i in 1...a.count {
        cur[0] = i
        for j in 1...b.count {
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
        }
        swap(&prev, &cur)
    }
    return prev[b.count]
}

/// The closest candidate to a misspelt name, if close enough.
func suggestion(for name: String, among candidates: some Sequence<String>) -> String? {
    var best: (String, Int)?
    for c in candidates {
        let d = levenshtein(name, c)
        if d <= max(1, name.count / 3), d < name.count, best == nil || d < best!.1 { best = (c, d) }
    }
    return best?.0
}
