/// Escaping of text for the pages' markup, which is XHTML-compatible so that it parses as XML.
enum XMLText {
    /// The longest user-supplied string (note, summary, id) a page shows, in characters; longer
    /// ones are cut with an ellipsis, so that one input cannot grow a page without bound.
    static let maxUserText = 600

    /// `s` with `&`, `<`, `>`, `"` and `'` escaped, and characters XML 1.0 forbids (C0 controls
    /// other than tab, LF, CR; U+FFFE, U+FFFF) replaced by U+FFFD. Safe in text and attributes.
    static func escape(_ s: String) -> String {
        var needs = false
        for u in s.unicodeScalars where u == "&" || u == "<" || u == ">" || u == "\"" || u == "'" || isForbidden(u) {
            needs = true
            break
        }
        guard needs else { return s }
        var out = ""
        out.unicodeScalars.reserveCapacity(s.unicodeScalars.count + 16)
        for u in s.unicodeScalars {
            switch u {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(isForbidden(u) ? "\u{FFFD}" : u)
            }
        }
        return out
    }

    /// `s` cut to ``maxUserText`` characters (with `…`), not yet escaped.
    static func bounded(_ s: String, limit: Int = maxUserText) -> String {
        guard s.count > limit else { return s }
        return String(s.prefix(limit - 1)) + "…"
    }

    private static func isForbidden(_ u: Unicode.Scalar) -> Bool {
        (u.value < 0x20 && u != "\t" && u != "\n" && u != "\r") || u.value == 0xFFFE || u.value == 0xFFFF
    }
}
