extension DailySeries {
    /// Appends ``json`` to a byte buffer, byte for byte the same, without building a `String`
    /// (a multi-day sync closes about a user-day a message, and building the `String` was ≈ 9 %
    /// of the daemon's instructions on that traffic).
    package func appendJSON(to out: inout [UInt8]) {
        out.append(literal: #"{"user":"#)
        JSONWriter.quote(user, into: &out)
        out.append(literal: #","day":""#)
        day.appendText(to: &out)
        out.append(0x22)
        if revised { out.append(literal: #","revised":true"#) }
        out.append(literal: #","series":{"#)
        for (k, v) in values.enumerated() {
            if k > 0 { out.append(0x2C) }
            JSONWriter.quote(v.name, into: &out)
            out.append(literal: #":{"value":"#)
            if let x = v.value { JSONWriter.appendNumber((x * 1e6).rounded() / 1e6, to: &out) } else { out.append(literal: "null") }
            out.append(literal: #","unit":"#)
            JSONWriter.quote(v.unit, into: &out)
            out.append(0x7D)
        }
        out.append(literal: "}}")
    }

    /// ``json`` as bytes (the payload published on `users/{user}/series`).
    package var jsonBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 + user.utf8.count + values.count * 48)
        appendJSON(to: &out)
        return out
    }
}

extension [UInt8] {
    /// Appends a literal's UTF-8 bytes in one copy (a `String`'s UTF8View is appended element-wise).
    @inline(__always)
    mutating func append(literal s: StaticString) { s.withUTF8Buffer { append(contentsOf: $0) } }
}
