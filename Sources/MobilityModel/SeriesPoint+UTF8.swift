extension SeriesPoint {
    /// Appends ``json`` to a byte buffer, byte for byte the same, without building a `String`
    /// (the replay writes hundreds of thousands of these).
    package func appendJSON(to out: inout [UInt8]) {
        out.append(contentsOf: #"{"user":"#.utf8)
        JSONWriter.quote(user, into: &out)
        out.append(contentsOf: #","series":"#.utf8)
        JSONWriter.quote(name, into: &out)
        out.append(contentsOf: #","day":""#.utf8)
        day.appendText(to: &out)
        out.append(contentsOf: #"","value":"#.utf8)
        if let value { JSONWriter.appendNumber((value * 1e6).rounded() / 1e6, to: &out) } else { out.append(contentsOf: "null".utf8) }
        out.append(contentsOf: #","unit":"#.utf8)
        JSONWriter.quote(unit, into: &out)
        if revised { out.append(contentsOf: #","revised":true"#.utf8) }
        out.append(0x7D)
    }
}

extension CivilDate {
    /// Appends ``description`` (`YYYY-MM-DD`) to a byte buffer.
    package func appendText(to out: inout [UInt8]) {
        guard (0...9999).contains(year) else { out.append(contentsOf: description.utf8); return }
        let y = Int(year)
        out.append(UInt8(48 + y / 1000))
        out.append(UInt8(48 + y / 100 % 10))
        out.append(UInt8(48 + y / 10 % 10))
        out.append(UInt8(48 + y % 10))
        out.append(0x2D)
        out.append(UInt8(48 + Int(month) / 10))
        out.append(UInt8(48 + Int(month) % 10))
        out.append(0x2D)
        out.append(UInt8(48 + Int(day) / 10))
        out.append(UInt8(48 + Int(day) % 10))
    }
}

extension JSONWriter {
    /// Appends a JSON string literal to a byte buffer (as ``quote(_:into:)`` writes it).
    package static func quote(_ s: String, into out: inout [UInt8]) {
        // A native string's bytes scanned and copied in one pass over its storage (the UTF8View's
        // element-wise scan and append were most of a series message's cost).
        let plain = s.utf8.withContiguousStorageIfAvailable { b -> Bool in
            for c in b where c < 0x20 || c == 0x22 || c == 0x5C { return false }
            out.append(0x22)
            out.append(contentsOf: b)
            out.append(0x22)
            return true
        }
        if plain == true { return }
        if plain == nil, !s.utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) {
            out.append(0x22)
            out.append(contentsOf: s.utf8)
            out.append(0x22)
            return
        }
        var text = ""
        quote(s, into: &text)
        out.append(contentsOf: text.utf8)
    }

    /// Appends ``format(_:)`` of a number to a byte buffer (integers without a `String`).
    package static func appendNumber(_ v: Double, to out: inout [UInt8]) {
        if v.isFinite, v == v.rounded(), abs(v) < 1e15 {
            var n = Int64(v)
            if n < 0 { out.append(0x2D); n = -n }
            var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            var count = 0
            withUnsafeMutableBytes(of: &digits) { d in
                repeat {
                    d[count] = UInt8(48 + n % 10)
                    n /= 10
                    count += 1
                } while n > 0
                for k in stride(from: count - 1, through: 0, by: -1) { out.append(d[k]) }
            }
            return
        }
        out.append(contentsOf: format(v).utf8)  // a short string: no allocation
    }
}
