/// Stored text made safe to print on a terminal: whatever a store, a broker or an older version
/// holds, nothing printed can carry an escape sequence to the operator's terminal.
///
/// Escaped are the control characters (Unicode category Cc: C0, DEL, C1) and the bidirectional
/// embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069), which reorder how a line
/// reads. Staff text refuses control characters on the way in (``StaffText``); this is for text
/// stored before that, or from anywhere else.
package enum TerminalText {
    /// Whether `u` is escaped.
    static func isEscaped(_ u: Unicode.Scalar) -> Bool {
        u.value < 0x20 || (u.value >= 0x7F && u.value <= 0x9F) || (u.value >= 0x202A && u.value <= 0x202E)
            || (u.value >= 0x2066 && u.value <= 0x2069)
    }

    /// `s` for a table cell or a line: each escaped character written visibly, `\n`, `\r`, `\t`,
    /// `\x1b` (C0, DEL, C1) or `\u{202e}` (bidirectional), so a row stays one row and says what
    /// the text held.
    package static func escaped(_ s: String) -> String {
        guard s.unicodeScalars.contains(where: isEscaped) else { return s }
        var out = String.UnicodeScalarView()
        for u in s.unicodeScalars {
            guard isEscaped(u) else {
                out.append(u)
                continue
            }
            let text: String
            switch u.value {
            case 0x0A: text = "\\n"
            case 0x0D: text = "\\r"
            case 0x09: text = "\\t"
            case ..<0x100: text = "\\x" + hex(u.value, digits: 2)
            default: text = "\\u{" + hex(u.value, digits: 4) + "}"
            }
            out.append(contentsOf: text.unicodeScalars)
        }
        return String(out)
    }

    /// JSON text (one line, as published or written) with each escaped character at or above
    /// U+007F written as a JSON escape (`\u009b`): the same JSON value, safe to print. Below
    /// U+0020 valid JSON holds only whitespace between tokens, which is left alone.
    package static func json(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.value >= 0x7F && isEscaped($0) }) else { return text }
        var out = String.UnicodeScalarView()
        for u in text.unicodeScalars {
            if u.value >= 0x7F && isEscaped(u) {
                out.append(contentsOf: ("\\u" + hex(u.value, digits: 4)).unicodeScalars)
            } else {
                out.append(u)
            }
        }
        return String(out)
    }

    private static func hex(_ v: UInt32, digits: Int) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: max(0, digits - s.count)) + s
    }
}
