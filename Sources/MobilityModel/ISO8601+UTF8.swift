extension ISO8601 {
    /// Appends ``format(_:offsetSeconds:)`` of an instant to a byte buffer, byte for byte the same,
    /// without building strings (the simulator formats two timestamps a sample).
    package static func append(_ t: Timestamp, offsetSeconds: Int32, to out: inout [UInt8]) {
        let local = t.milliseconds + Int64(offsetSeconds) * 1000
        let ms = Int(((local % 1000) + 1000) % 1000)
        let secs = (local - Int64(ms)) / 1000
        let day = Int32((secs >= 0 ? secs : secs - 86_399) / 86_400)
        let sod = Int(secs - Int64(day) * 86_400)
        CivilDate(dayNumber: day).appendText(to: &out)
        @inline(__always) func two(_ v: Int) {
            out.append(UInt8(48 + v / 10 % 10))
            out.append(UInt8(48 + v % 10))
        }
        out.append(UInt8(ascii: "T"))
        two(sod / 3600)
        out.append(UInt8(ascii: ":"))
        two(sod / 60 % 60)
        out.append(UInt8(ascii: ":"))
        two(sod % 60)
        if ms != 0 {
            out.append(UInt8(ascii: "."))
            out.append(UInt8(48 + ms / 100))
            two(ms % 100)
        }
        if offsetSeconds == 0 {
            out.append(UInt8(ascii: "Z"))
        } else {
            let o = abs(Int(offsetSeconds))
            out.append(offsetSeconds < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
            if o / 3600 >= 100 { out.append(contentsOf: String(o / 3600).utf8) } else { two(o / 3600) }
            out.append(UInt8(ascii: ":"))
            two(o / 60 % 60)
        }
    }
}
