/// How serious a diagnostic is.
package enum DiagnosticSeverity: String, Hashable, Sendable {
    case error, warning, note
}

/// What a diagnostic says: its text, stable id and severity (swift-syntax's `DiagnosticMessage`).
package protocol DiagnosticMessage: Sendable {
    /// A lower-case, one-line message without a trailing period.
    var message: String { get }
    /// The stable identifier (documented in `docs/rule-language.md`).
    var diagnosticID: DiagnosticID { get }
    /// Error, warning or note.
    var severity: DiagnosticSeverity { get }
}

/// A further explanation of a diagnostic, optionally pointing at a place of its own
/// (`first defined here` under the first definition).
package struct Note: Hashable, Sendable {
    /// What the note says.
    package var message: RuleNote
    /// Where it points, if anywhere; rendered as its own `file:line:col: note:` with a caret.
    package var range: SourceRange?

    package init(message: RuleNote, range: SourceRange? = nil) {
        self.message = message
        self.range = range
    }
}

/// A suggested edit: replace the text at `range` with `replacement` ("did you mean").
package struct FixIt: Hashable, Sendable {
    /// The text to put in place of the range.
    package var replacement: String
    /// The source text to replace.
    package var range: SourceRange

    /// Creates a fix-it.
    package init(replacement: String, range: SourceRange) {
        self.replacement = replacement
        self.range = range
    }

    /// How the fix-it is shown: `did you mean 'walkingSpeed'?`.
    package var message: String { "did you mean '\(replacement)'?" }
}

/// A problem found in rule source: a catalogued message (which fixes id and severity), where,
/// notes and fix-its.
package struct Diagnostic: Hashable, Sendable {
    /// What is wrong, from the catalogue.
    package var diagMessage: RuleMessage
    /// Where.
    package var range: SourceRange
    /// Further explanations, some with a location of their own.
    package var notes: [Note]
    /// Suggested edits (`did you mean 'walkingSpeed'?`).
    package var fixIts: [FixIt]

    package init(_ message: RuleMessage, at range: SourceRange, notes: [Note] = [], fixIts: [FixIt] = []) {
        self.diagMessage = message
        self.range = range
        self.notes = notes
        self.fixIts = fixIts
    }

    /// Error, warning or note (fixed by the message).
    package var severity: DiagnosticSeverity { diagMessage.severity }
    /// The stable identifier (fixed by the message).
    package var id: DiagnosticID { diagMessage.diagnosticID }
    /// A lower-case, one-line message without a trailing period.
    package var message: String { diagMessage.message }
}

/// Renders diagnostics the way compilers do:
/// `rules/recovery.rules:12:17: error: cannot compare speed with number [unit-mismatch]`, the
/// source line, and a caret under the column.
package struct DiagnosticRenderer: Sendable {
    /// Source files by index.
    package let files: [SourceFile]
    /// Whether to colour the output (only on a terminal).
    package var colour: Bool

    /// Longer source lines are shown as an excerpt of this many characters around the column.
    package static let maxLineWidth = 160

    package init(files: [SourceFile], colour: Bool = false) {
        self.files = files
        self.colour = colour
    }

    /// The `file:line:col` prefix of a range.
    package func position(_ r: SourceRange) -> String {
        let f = files[r.file]
        let (l, c) = f.location(of: r.range.lowerBound)
        return "\(f.path):\(l):\(c)"
    }

    /// Renders one diagnostic with its source line and caret, then its fix-its and notes (a
    /// located note as its own `file:line:col: note:` with its source line and caret).
    package func render(_ d: Diagnostic) -> String {
        var out = located(d.range, severity: d.severity, tail: "\(d.message) [\(d.id.rawValue)]")
        for f in d.fixIts { out += "    note: \(f.message)\n" }
        for n in d.notes {
            if let r = n.range { out += located(r, severity: .note, tail: n.message.message) } else { out += "    note: \(n.message.message)\n" }
        }
        return out
    }

    /// `file:line:col: severity: tail`, the source line and a caret under the range.
    private func located(_ range: SourceRange, severity: DiagnosticSeverity, tail: String) -> String {
        let f = files[range.file]
        let (line, col) = f.location(of: range.range.lowerBound)
        let (endLine, endCol) = f.location(of: max(range.range.upperBound, range.range.lowerBound + 1) - 1)
        let sev = severity.rawValue
        let where_ = "\(f.path):\(line):\(col):"
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
        // Columns count the characters of the line's prefix decoded on its own; a prefix that cuts
        // a multi-byte character (invalid UTF-8) counts more than the line shows. Keep the caret
        // on the line shown, at least one character wide.
        caretCol = min(max(1, caretCol), text.count + 1)
        width = max(1, width)
        let caretPad = String(text.prefix(caretCol - 1).map { $0 == "\t" ? "\t" : " " })
        out += "    " + caretPad + (colour ? "\u{1B}[32m" : "") + "^" + String(repeating: "~", count: width - 1) + (colour ? "\u{1B}[0m" : "") + "\n"
        return out
    }

    /// Renders many, sorted by file and position.
    package func render(_ ds: [Diagnostic]) -> String {
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
