extension ISO8601 {
    /// The day number of the last date part (`YYYY-MM-DD`) a parse read in full, so that the next
    /// timestamp on the same date skips validating and converting it: the timestamps of one
    /// message (a sample's start and end, a phone's sync) fall on two or three dates.
    ///
    /// Keyed on the date's ten bytes exactly, and filled only with a date that was validated, so a
    /// parse through a cache gives the same result and the same rejections as one without.
    package struct DateCache: Sendable {
        /// Bytes 0–7 and 8–9 of the cached date, as loaded (host byte order).
        var head: UInt64
        var tail: UInt16
        var day: Int32

        /// A cache holding 1970-01-01 (day 0), a valid entry: no sentinel needs checking.
        package init() {
            head = UInt64(littleEndian: 0x2D31_302D_3037_3931)  // "1970-01-"
            tail = UInt16(littleEndian: 0x3130)  // "01"
            day = 0
        }
    }

    /// Whether every byte of `w` under `mask` is an ASCII digit (eight bytes at once).
    @inline(__always) private static func digits(_ w: UInt64, _ mask: UInt64) -> Bool {
        let high = 0xF0F0_F0F0_F0F0_F0F0 & mask, zeros = 0x3030_3030_3030_3030 & mask
        // 0x30…0x3F, then no byte past 0x39 (adding 6 carries into the high nibble; no byte
        // reaches 0x100, so no carry crosses into the next byte)
        return w & high == zeros && (w &+ (0x0606_0606_0606_0606 & mask)) & high == zeros
    }

    /// Two-digit numbers of the digit pairs starting at each byte: byte k of the result is
    /// `10 × byte k + byte k+1` of the digits' values (only the pairs a caller masked are meaningful).
    @inline(__always) private static func pairs(_ w: UInt64, _ mask: UInt64) -> UInt64 {
        let v = w & mask & 0x0F0F_0F0F_0F0F_0F0F
        return v &* 10 &+ (v >> 8)
    }

    /// The common forms at fixed offsets: `YYYY-MM-DDTHH:MM:SS` then `Z`, `.fffZ`, `±HH:MM` or
    /// `.fff±HH:MM` (20, 24, 25 or 29 bytes). `nil` for anything else, including a string of
    /// that shape with a field out of range: the general parser then decides, so this path only
    /// ever returns what ``parseGeneral(utf8:)`` returns.
    @inline(__always)
    static func parseFixed(_ b: UnsafeBufferPointer<UInt8>, dates: inout DateCache) -> (Timestamp, offsetSeconds: Int32)? {
        #if _endian(little)
            let n = b.count
            guard n == 20 || n == 24 || n == 25 || n == 29, let base = b.baseAddress else { return nil }
            let raw = UnsafeRawPointer(base)
            // "YYYY-MM-" and "DD": the date, looked up first.
            let head = raw.loadUnaligned(as: UInt64.self)
            let tail = raw.loadUnaligned(fromByteOffset: 8, as: UInt16.self)
            let day: Int32
            if head == dates.head && tail == dates.tail {
                day = dates.day
            } else {
                guard head & 0xFF00_00FF_0000_0000 == 0x2D00_002D_0000_0000, digits(head, 0x00FF_FF00_FFFF_FFFF), digits(UInt64(tail), 0xFFFF)
                else { return nil }
                let p = pairs(head, 0x00FF_FF00_FFFF_FFFF)
                let year = Int(p & 0xFF) * 100 + Int(p >> 16 & 0xFF), month = Int(p >> 40 & 0xFF)
                let dom = Int(pairs(UInt64(tail), 0xFFFF) & 0xFF)
                guard month >= 1, month <= 12, dom >= 1, dom <= CivilDate.daysInMonth(year: year, month: month) else { return nil }
                day = CivilDate(year: year, month: month, day: dom).dayNumber
                dates.head = head
                dates.tail = tail
                dates.day = day
            }
            // "T", then "HH:MM:SS" at 11.
            let time = raw.loadUnaligned(fromByteOffset: 11, as: UInt64.self)
            guard base[10] == 84, time & 0x0000_FF00_00FF_0000 == 0x0000_3A00_003A_0000, digits(time, 0xFFFF_00FF_FF00_FFFF) else { return nil }
            let t = pairs(time, 0xFFFF_00FF_FF00_FFFF)
            let hour = Int32(t & 0xFF), minute = Int32(t >> 24 & 0xFF), second = Int32(t >> 48 & 0xFF)
            guard hour <= 23, minute <= 59, second <= 60 else { return nil }
            var millis: Int32 = 0
            if n == 24 || n == 29 {
                let f0 = Int32(base[20]) &- 48, f1 = Int32(base[21]) &- 48, f2 = Int32(base[22]) &- 48
                guard base[19] == 46, f0 >= 0, f0 <= 9, f1 >= 0, f1 <= 9, f2 >= 0, f2 <= 9 else { return nil }  // .fff
                millis = f0 * 100 + f1 * 10 + f2
            }
            var offset: Int32 = 0
            if n == 20 || n == 24 {
                guard base[n - 1] == 90 else { return nil }  // Z
            } else {
                // The last eight bytes, "xx±HH:MM".
                let tz = raw.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)
                let sign = base[n - 6]
                guard sign == 43 || sign == 45, tz & 0x0000_FF00_0000_0000 == 0x0000_3A00_0000_0000, digits(tz, 0xFFFF_00FF_FF00_0000) else { return nil }
                let o = pairs(tz, 0xFFFF_00FF_FF00_0000)
                let oh = Int32(o >> 24 & 0xFF), om = Int32(o >> 48 & 0xFF)
                guard oh <= 23, om <= 59 else { return nil }
                offset = sign == 45 ? -(oh * 3600 + om * 60) : oh * 3600 + om * 60
            }
            let secs = Int64(day) * 86_400 + Int64(hour * 3600 + minute * 60 + min(second, 59)) - Int64(offset)
            return (Timestamp(milliseconds: secs * 1000 + Int64(millis)), offset)
        #else
            return nil
        #endif
    }
}
