extension JSONValue {
    /// Why a text is not JSON.
    package struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        /// The byte offset of the problem.
        package var offset: Int
        /// What is wrong, lower case.
        package var message: String
        /// `message at byte offset`.
        package var description: String { "\(message) at byte \(offset)" }
    }

    /// The deepest nesting accepted; deeper input is refused rather than recursed into.
    package static let maxDepth = 32

    /// Parses UTF-8 bytes.
    package static func parse(_ bytes: [UInt8]) -> Result<JSONValue, ParseError> {
        bytes.withUnsafeBufferPointer { buf in
            var p = JSONParser(b: buf)
            do {
                p.skipWS()
                let v = try p.value(depth: 0)
                p.skipWS()
                if p.i != buf.count { throw ParseError(offset: p.i, message: "trailing characters after the value") }
                return .success(v)
            } catch let e as ParseError {
                return .failure(e)
            } catch {
                return .failure(ParseError(offset: p.i, message: "invalid JSON"))
            }
        }
    }

    /// Parses a string.
    package static func parse(_ text: String) -> Result<JSONValue, ParseError> { parse(Array(text.utf8)) }
}

/// A recursive-descent JSON parser over UTF-8 bytes (RFC 8259, strings validated as UTF-8,
/// nesting bounded by ``JSONValue/maxDepth``); `JSONValue.parse` is its API.
struct JSONParser {
    let b: UnsafeBufferPointer<UInt8>
    var i = 0

    init(b: UnsafeBufferPointer<UInt8>) { self.b = b }

    func fail(_ m: String) -> JSONValue.ParseError { JSONValue.ParseError(offset: i, message: m) }

    mutating func skipWS() {
        while i < b.count, b[i] == 32 || b[i] == 9 || b[i] == 10 || b[i] == 13 { i += 1 }
    }

    mutating func value(depth: Int) throws -> JSONValue {
        guard i < b.count else { throw fail(i == 0 ? "empty payload" : "unexpected end of input") }
        switch b[i] {
        case UInt8(ascii: "{"):
            guard depth < JSONValue.maxDepth else { throw fail("nesting deeper than \(JSONValue.maxDepth)") }
            i += 1
            var members: [(String, JSONValue)] = []
            skipWS()
            if i < b.count, b[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
            while true {
                skipWS()
                guard i < b.count, b[i] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
                let k = try string()
                skipWS()
                guard i < b.count, b[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                i += 1
                skipWS()
                members.append((k, try value(depth: depth + 1)))
                skipWS()
                guard i < b.count else { throw fail("unexpected end of input") }
                if b[i] == UInt8(ascii: ",") { i += 1; continue }
                if b[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
                throw fail("expected ',' or '}'")
            }
        case UInt8(ascii: "["):
            guard depth < JSONValue.maxDepth else { throw fail("nesting deeper than \(JSONValue.maxDepth)") }
            i += 1
            var items: [JSONValue] = []
            skipWS()
            if i < b.count, b[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
            while true {
                skipWS()
                items.append(try value(depth: depth + 1))
                skipWS()
                guard i < b.count else { throw fail("unexpected end of input") }
                if b[i] == UInt8(ascii: ",") { i += 1; continue }
                if b[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
                throw fail("expected ',' or ']'")
            }
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return .number(try number())
        default:
            throw fail("unexpected character")
        }
    }

    mutating func literal(_ s: StaticString) throws {
        let n = s.utf8CodeUnitCount
        guard i + n <= b.count else { throw fail("invalid literal") }
        for k in 0..<n where b[i + k] != s.utf8Start[k] { throw fail("invalid literal") }
        i += n
    }

    mutating func number() throws -> Double {
        let start = i
        if b[i] == UInt8(ascii: "-") { i += 1 }
        func digits() -> Int { let s = i; while i < b.count, b[i] >= 48, b[i] <= 57 { i += 1 }; return i - s }
        guard i < b.count else { throw fail("invalid number") }
        if b[i] == UInt8(ascii: "0") { i += 1 } else if digits() == 0 { throw fail("invalid number") }
        if i < b.count, b[i] == UInt8(ascii: ".") { i += 1; guard digits() > 0 else { throw fail("invalid number") } }
        if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
            i += 1
            if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
            guard digits() > 0 else { throw fail("invalid number") }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: b[start..<i]), as: UTF8.self)
        guard let v = Double(text) else { throw fail("invalid number") }
        return v
    }

    mutating func string() throws -> String {
        i += 1  // opening quote
        let start = i
        var plain = true
        while i < b.count {
            let c = b[i]
            if c == UInt8(ascii: "\"") {
                if plain {
                    let slice = UnsafeBufferPointer(rebasing: b[start..<i])
                    guard let s = String(validating: slice, as: UTF8.self) else { throw fail("invalid UTF-8") }
                    i += 1
                    return s
                }
                break
            }
            if c < 0x20 { throw fail("control character in string") }
            if c == UInt8(ascii: "\\") { plain = false; i += 2; continue }
            i += 1
        }
        guard i < b.count else { throw fail("unterminated string") }
        // Slow path with escapes.
        var out: [UInt8] = []
        var j = start
        while j < i {
            let c = b[j]
            if c != UInt8(ascii: "\\") { out.append(c); j += 1; continue }
            j += 1
            guard j < i else { throw fail("invalid escape") }
            switch b[j] {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                func hex4(_ at: Int) throws -> UInt32 {
                    guard at + 4 <= i else { throw fail("invalid \\u escape") }
                    var v: UInt32 = 0
                    for k in 0..<4 {
                        let h = b[at + k]
                        let d: UInt8
                        switch h {
                        case 48...57: d = h - 48
                        case 65...70: d = h - 55
                        case 97...102: d = h - 87
                        default: throw fail("invalid \\u escape")
                        }
                        v = v * 16 + UInt32(d)
                    }
                    return v
                }
                var scalar = try hex4(j + 1)
                j += 4
                if (0xD800...0xDBFF).contains(scalar), j + 6 < i + 1, b[j + 1] == UInt8(ascii: "\\"), b[j + 2] == UInt8(ascii: "u") {
                    let low = try hex4(j + 3)
                    if (0xDC00...0xDFFF).contains(low) {
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        j += 6
                    }
                }
                guard let u = Unicode.Scalar(scalar) else { throw fail("invalid \\u escape") }
                out.append(contentsOf: Array(String(Character(u)).utf8))
            default: throw fail("invalid escape")
            }
            j += 1
        }
        guard let s = String(validating: out, as: UTF8.self) else { throw fail("invalid UTF-8") }
        i += 1
        return s
    }
}
