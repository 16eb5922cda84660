import MobilityModel

/// A lexical token.
package struct Token: Hashable, Sendable {
    /// Token kinds.
    package enum Kind: Hashable, Sendable {
        case identifier
        case number
        /// A unit written after a number (`m/s`, `%`, `d`).
        case unit
        case string
        case punct
        case eof
    }

    /// The kind.
    package var kind: Kind
    /// The source text (for strings, the decoded contents).
    package var text: String
    /// For numbers, the value.
    package var number: Double
    /// Byte range in the file.
    package var range: Range<Int>
}

/// Turns rule source into tokens. Never throws: bad characters become diagnostics and are skipped.
package struct Lexer {
    let bytes: [UInt8]
    let file: Int
    var i = 0
    /// Diagnostics found while lexing (at most ``RuleLimits/maxDiagnosticsPerFile``).
    package private(set) var diagnostics: [Diagnostic] = []
    /// Diagnostics found past the cap, not kept.
    package private(set) var dropped = 0

    /// Words that may never be read as a unit after a number.
    static let keywords: Set<String> = ["and", "or", "not", "true", "false"]

    /// Creates a lexer over a file.
    package init(_ source: SourceFile, file: Int) {
        self.bytes = source.bytes
        self.file = file
    }

    /// Lexes the whole file; the last token is `.eof`.
    package mutating func tokenize() -> [Token] {
        var out: [Token] = []
        while true {
            let t = next()
            out.append(t)
            if t.kind == .eof { return out }
            if t.kind == .number, let u = unitAfterNumber() { out.append(u) }
        }
    }

    private func isIdentStart(_ c: UInt8) -> Bool { (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 95 }
    private func isDigit(_ c: UInt8) -> Bool { c >= 48 && c <= 57 }

    private mutating func skipTrivia() {
        while i < bytes.count {
            let c = bytes[i]
            if c == 32 || c == 9 || c == 10 || c == 13 {
                i += 1
            } else if c == 35 {  // # comment
                while i < bytes.count, bytes[i] != 10 { i += 1 }
            } else {
                return
            }
        }
    }

    private func text(_ r: Range<Int>) -> String { String(decoding: bytes[r], as: UTF8.self) }

    private mutating func report(_ d: Diagnostic) {
        if diagnostics.count < RuleLimits.maxDiagnosticsPerFile { diagnostics.append(d) } else { dropped += 1 }
    }

    /// Whether the byte at `j` starts a token or trivia: anything else is an unexpected character.
    private func startsToken(at j: Int) -> Bool {
        let c = bytes[j]
        switch c {
        case 32, 9, 10, 13, 35, 34, 40, 41, 123, 125, 44, 58, 61, 60, 62, 43, 45, 42, 47, 37: return true
        case 33: return j + 1 < bytes.count && bytes[j + 1] == 61  // '!' only in '!='
        case 46: return j + 1 < bytes.count && isDigit(bytes[j + 1])  // '.' only in '.5'
        default: return isIdentStart(c) || isDigit(c)
        }
    }

    mutating func next() -> Token {
        while true {
            if let t = token() { return t }
        }
    }

    /// One token, or nil after skipping a run of unexpected characters (one diagnostic for the
    /// run: a loop, not a recursion, however long it is).
    private mutating func token() -> Token? {
        skipTrivia()
        guard i < bytes.count else { return Token(kind: .eof, text: "", number: 0, range: i..<i) }
        let start = i
        let c = bytes[i]
        if isIdentStart(c) {
            while i < bytes.count, isIdentStart(bytes[i]) || isDigit(bytes[i]) { i += 1 }
            return Token(kind: .identifier, text: text(start..<i), number: 0, range: start..<i)
        }
        if isDigit(c) || (c == 46 && i + 1 < bytes.count && isDigit(bytes[i + 1])) {
            while i < bytes.count, isDigit(bytes[i]) || bytes[i] == 46 || bytes[i] == 95 { i += 1 }
            if i < bytes.count, bytes[i] == 101 || bytes[i] == 69, i + 1 < bytes.count,
                isDigit(bytes[i + 1]) || ((bytes[i + 1] == 45 || bytes[i + 1] == 43) && i + 2 < bytes.count && isDigit(bytes[i + 2]))
            {
                i += 2
                while i < bytes.count, isDigit(bytes[i]) { i += 1 }
            }
            let t = text(start..<i).replacingOccurrences(of: "_", with: "")
            guard let v = Double(t), v.isFinite else {
                report(Diagnostic(.invalidNumber(text(start..<i)), at: SourceRange(file: file, start..<i)))
                return Token(kind: .number, text: t, number: 0, range: start..<i)
            }
            return Token(kind: .number, text: t, number: v, range: start..<i)
        }
        if c == 34 { return string(start) }
        i += 1
        let two = i < bytes.count ? [c, bytes[i]] : [c]
        switch two {
        case [61, 61], [33, 61], [60, 61], [62, 61]:
            i += 1
            return Token(kind: .punct, text: text(start..<i), number: 0, range: start..<i)
        default: break
        }
        switch c {
        case 40, 41, 123, 125, 44, 58, 61, 60, 62, 43, 45, 42, 47, 37:
            return Token(kind: .punct, text: text(start..<i), number: 0, range: start..<i)
        default:
            // Skip a whole UTF-8 scalar so the message names the character, then the rest of
            // the run of unexpected characters ('!' alone is one too), reported once.
            while i < bytes.count, bytes[i] & 0xC0 == 0x80 { i += 1 }
            let first = text(start..<i)
            var count = 1
            while i < bytes.count, !startsToken(at: i) {
                i += 1
                while i < bytes.count, bytes[i] & 0xC0 == 0x80 { i += 1 }
                count += 1
            }
            report(Diagnostic(.unexpectedCharacters(first: first, count: count), at: SourceRange(file: file, start..<i)))
            return nil
        }
    }

    /// After a number: reads a unit spelling (`m/s`, `ml/(kg*min)`, `%`) if one follows on the same line.
    mutating func unitAfterNumber() -> Token? {
        var j = i
        while j < bytes.count, bytes[j] == 32 || bytes[j] == 9 { j += 1 }
        guard j < bytes.count, isIdentStart(bytes[j]) || bytes[j] == 37 else { return nil }
        let start = j
        var depth = 0
        while j < bytes.count {
            let b = bytes[j]
            if isIdentStart(b) || isDigit(b) || b == 37 || b == 42 { j += 1; continue }
            if b == 47 {  // '/' continues a unit only if a unit atom follows
                if j + 1 < bytes.count, isIdentStart(bytes[j + 1]) || bytes[j + 1] == 40 || bytes[j + 1] == 37 { j += 1; continue }
                break
            }
            if b == 40, j > start, bytes[j - 1] == 47 { depth += 1; j += 1; continue }
            if b == 41, depth > 0 { depth -= 1; j += 1; continue }
            if b == 0xC2, j + 1 < bytes.count, bytes[j + 1] == 0xB7 { j += 2; continue }  // ·
            break
        }
        let word = text(start..<j)
        if Lexer.keywords.contains(word) { return nil }
        i = j
        return Token(kind: .unit, text: word, number: 0, range: start..<j)
    }

    private mutating func string(_ start: Int) -> Token {
        i += 1
        var out: [UInt8] = []
        while i < bytes.count {
            let b = bytes[i]
            if b == 34 { i += 1; return Token(kind: .string, text: String(decoding: out, as: UTF8.self), number: 0, range: start..<i) }
            if b == 10 { break }
            if b == 92, i + 1 < bytes.count {
                let e = bytes[i + 1]
                out.append(e == 110 ? 10 : e == 116 ? 9 : e)
                i += 2
                continue
            }
            out.append(b)
            i += 1
        }
        report(Diagnostic(.unterminatedString, at: SourceRange(file: file, start..<i)))
        return Token(kind: .string, text: String(decoding: out, as: UTF8.self), number: 0, range: start..<i)
    }
}
