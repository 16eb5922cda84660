/// Builds compact JSON text with deterministic member order.
///
/// The text is written as UTF-8 bytes (``bytes``: what is published and stored), not appended to a
/// `String`: a weekly digest cost ~205 k instructions as `String` appends and ~59 k as bytes.
/// ``text`` is the same bytes as a `String`.
package struct JSONWriter: Sendable {
    /// The text so far, as UTF-8.
    package private(set) var bytes: [UInt8] = []
    /// Whether the innermost open object or array already has a member.
    private var needsComma = false
    /// The enclosing containers' `needsComma`, innermost last.
    private var outer: [Bool] = []

    /// The text so far.
    package var text: String { String(decoding: bytes, as: UTF8.self) }

    package init() { bytes.reserveCapacity(256) }

    private mutating func comma() {
        if needsComma { bytes.append(0x2C) }
        needsComma = true
    }

    private mutating func open(_ bracket: UInt8) {
        bytes.append(bracket)
        outer.append(needsComma)
        needsComma = false
    }

    private mutating func close(_ bracket: UInt8) {
        bytes.append(bracket)
        needsComma = outer.removeLast()
    }

    /// Opens an object, as a member value if `key` is given.
    package mutating func beginObject(_ key: String? = nil) { if let key { self.key(key) } else { comma() }; open(0x7B) }
    /// Closes an object.
    package mutating func endObject() { close(0x7D) }
    /// Opens an array.
    package mutating func beginArray(_ key: String? = nil) { if let key { self.key(key) } else { comma() }; open(0x5B) }
    /// Closes an array.
    package mutating func endArray() { close(0x5D) }

    private mutating func key(_ k: String) { comma(); JSONWriter.quote(k, into: &bytes); bytes.append(0x3A) }

    /// A string member (or element when `key` is nil).
    package mutating func string(_ key: String?, _ v: String) { if let key { self.key(key) } else { comma() }; JSONWriter.quote(v, into: &bytes) }
    /// A number member; non-finite numbers are written as null.
    package mutating func number(_ key: String?, _ v: Double) {
        if let key { self.key(key) } else { comma() }
        JSONWriter.appendNumber(v, to: &bytes)
    }
    /// An integer member.
    package mutating func int(_ key: String?, _ v: Int64) {
        if let key { self.key(key) } else { comma() }
        if (-999_999_999_999_999...999_999_999_999_999).contains(v) {
            JSONWriter.appendNumber(Double(v), to: &bytes)
        } else {
            bytes.append(contentsOf: String(v).utf8)
        }
    }
    /// A boolean member.
    package mutating func bool(_ key: String?, _ v: Bool) {
        if let key { self.key(key) } else { comma() }; bytes.append(contentsOf: (v ? "true" : "false").utf8)
    }
    /// A null member.
    package mutating func null(_ key: String?) { if let key { self.key(key) } else { comma() }; bytes.append(contentsOf: "null".utf8) }

    /// Shortest round-tripping text of a finite double; integers without a fraction.
    package static func format(_ v: Double) -> String {
        guard v.isFinite else { return "null" }
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return String(v)
    }

    /// Appends a JSON string literal.
    package static func quote(_ s: String, into out: inout String) {
        out += "\""
        // Most strings (ids, names, topics) need no escaping: append them whole.
        if !s.utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) {
            out += s
            out += "\""
            return
        }
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 {
                    let h = String(u.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - h.count) + h
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        out += "\""
    }
}

extension JSONValue {
    /// Compact JSON text of the value.
    package var text: String {
        var out = ""
        write(into: &out)
        return out
    }

    private func write(into out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let n):
            // A literal that overflowed to infinity is written back as an overflowing literal, so
            // parse(text) gives the same value (a recorded payload keeps its meaning on replay).
            out += n.isFinite ? JSONWriter.format(n) : (n > 0 ? "1e999" : "-1e999")
        case .string(let s): JSONWriter.quote(s, into: &out)
        case .array(let a):
            out += "["
            for (i, v) in a.enumerated() { if i > 0 { out += "," }; v.write(into: &out) }
            out += "]"
        case .object(let o):
            out += "{"
            for (i, (k, v)) in o.enumerated() {
                if i > 0 { out += "," }
                JSONWriter.quote(k, into: &out)
                out += ":"
                v.write(into: &out)
            }
            out += "}"
        }
    }
}
