/// A parsed JSON value. Small and strict: RFC 8259, UTF-8 validated, nesting depth limited.
package enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    /// Structural equality; objects compare their members in order.
    package static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case let (.bool(x), .bool(y)): x == y
        case let (.number(x), .number(y)): x == y
        case let (.string(x), .string(y)): x == y
        case let (.array(x), .array(y)): x == y
        case let (.object(x), .object(y)): x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    /// Hashes the structure (consistent with `==`).
    package func hash(into h: inout Hasher) {
        switch self {
        case .null: h.combine(0)
        case .bool(let b): h.combine(b)
        case .number(let n): h.combine(n)
        case .string(let s): h.combine(s)
        case .array(let a): h.combine(a)
        case .object(let o): for (k, v) in o { h.combine(k); h.combine(v) }
        }
    }

    /// Whether a number anywhere in the value overflowed a `Double` (`1e999`).
    package var containsNonFiniteNumber: Bool {
        switch self {
        case .number(let n): !n.isFinite
        case .array(let a): a.contains { $0.containsNonFiniteNumber }
        case .object(let o): o.contains { $0.1.containsNonFiniteNumber }
        default: false
        }
    }

    /// The member of an object with a key (the first, if duplicated).
    package subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { for (k, v) in members where k == key { return v } }
        return nil
    }
}
