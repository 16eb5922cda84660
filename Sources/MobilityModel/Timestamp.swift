/// An instant in event time: milliseconds since 1970-01-01T00:00:00Z.
///
/// Integer milliseconds keep arithmetic exact, so replays are deterministic.
package struct Timestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Milliseconds since the Unix epoch, UTC.
    package var milliseconds: Int64

    /// Creates a timestamp from milliseconds since the epoch.
    @inlinable package init(milliseconds: Int64) { self.milliseconds = milliseconds }
    /// Creates a timestamp from seconds since the epoch.
    @inlinable package init(seconds: Int64) { self.milliseconds = seconds * 1000 }

    /// Whole seconds since the epoch (rounded down).
    @inlinable package var seconds: Int64 { milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000 }

    /// Earlier instants sort first.
    @inlinable package static func < (a: Timestamp, b: Timestamp) -> Bool { a.milliseconds < b.milliseconds }
    /// Adds a number of seconds.
    @inlinable package func adding(seconds s: Int64) -> Timestamp { Timestamp(milliseconds: milliseconds + s * 1000) }

    /// RFC 3339 in UTC, e.g. `2026-03-01T16:15:00Z` (milliseconds shown only when non-zero).
    package var description: String { ISO8601.format(self, offsetSeconds: 0) }
}

/// A fast, allocation-free ISO 8601 / RFC 3339 parser and formatter for the timestamps on the wire.
///
/// Accepts `2026-03-01T08:15:00Z`, fractional seconds, offsets `+01:00`/`+0100`, and the Apple
/// Health export form `2026-03-01 08:15:00 -0800`. Foundation's `ISO8601DateFormatter` is about
/// 100× slower on this machine, which matters on the ingest path.
package enum ISO8601 {
    /// Parses a timestamp, returning the instant and the UTC offset it was written with.
    package static func parse(_ s: String) -> (Timestamp, offsetSeconds: Int32)? {
        var s = s
        return s.withUTF8 { parse(utf8: $0) }
    }

    /// Parses UTF-8 bytes; see ``parse(_:)``.
    package static func parse(utf8 b: UnsafeBufferPointer<UInt8>) -> (Timestamp, offsetSeconds: Int32)? {
        var dates = DateCache()
        return parse(utf8: b, dates: &dates)
    }

    /// Parses UTF-8 bytes, reusing the date part of the previous timestamp read through `dates`
    /// when it is the same; the same results and rejections as ``parse(utf8:)``.
    package static func parse(utf8 b: UnsafeBufferPointer<UInt8>, dates: inout DateCache) -> (Timestamp, offsetSeconds: Int32)? {
        if let t = parseFixed(b, dates: &dates) { return t }
        return parseGeneral(utf8: b)
    }

    /// The general parser of every accepted form, byte by byte (the fixed-offset forms go
    /// through ``parseFixed(_:dates:)`` first).
    static func parseGeneral(utf8 b: UnsafeBufferPointer<UInt8>) -> (Timestamp, offsetSeconds: Int32)? {
        var i = 0
        let n = b.count
        @inline(__always) func digits(_ count: Int) -> Int? {
            guard i + count <= n else { return nil }
            var v = 0
            for k in 0..<count {
                let c = b[i + k]
                guard c >= 48 && c <= 57 else { return nil }
                v = v * 10 + Int(c - 48)
            }
            i += count
            return v
        }
        @inline(__always) func expect(_ c: UInt8) -> Bool {
            guard i < n, b[i] == c else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), expect(45), let month = digits(2), expect(45), let day = digits(2) else { return nil }
        guard i < n, b[i] == 84 || b[i] == 116 || b[i] == 32 else { return nil }  // T t space
        i += 1
        guard let hour = digits(2), expect(58), let minute = digits(2), expect(58), let second = digits(2) else { return nil }
        guard (1...12).contains(month), (1...31).contains(day), hour <= 23, minute <= 59, second <= 60 else { return nil }
        guard day <= CivilDate.daysInMonth(year: year, month: month) else { return nil }
        var millis = 0
        if i < n, b[i] == 46 || b[i] == 44 {  // . or ,
            i += 1
            var scale = 100
            var any = false
            while i < n, b[i] >= 48, b[i] <= 57 {
                millis += Int(b[i] - 48) * scale
                scale /= 10
                i += 1
                any = true
            }
            guard any else { return nil }
        }
        if i < n, b[i] == 32 { i += 1 }  // export form: space before the offset
        guard i < n else { return nil }  // an offset is mandatory: local times without one are ambiguous
        var offset = 0
        switch b[i] {
        case 90, 122: i += 1  // Z z
        case 43, 45:
            let sign = b[i] == 45 ? -1 : 1
            i += 1
            guard let oh = digits(2) else { return nil }
            _ = expect(58)
            guard let om = digits(2), oh <= 23, om <= 59 else { return nil }
            offset = sign * (oh * 3600 + om * 60)
        default: return nil
        }
        guard i == n else { return nil }
        let days = CivilDate(year: year, month: month, day: day).dayNumber
        let secs = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + min(second, 59)) - Int64(offset)
        return (Timestamp(milliseconds: secs * 1000 + Int64(millis)), Int32(offset))
    }

    /// Formats an instant as RFC 3339 at a given UTC offset.
    package static func format(_ t: Timestamp, offsetSeconds: Int32) -> String {
        let local = t.milliseconds + Int64(offsetSeconds) * 1000
        let ms = Int(((local % 1000) + 1000) % 1000)
        let secs = (local - Int64(ms)) / 1000
        let day = Int32((secs >= 0 ? secs : secs - 86_399) / 86_400)
        let sod = Int(secs - Int64(day) * 86_400)
        let c = CivilDate(dayNumber: day)
        var out = c.description + "T" + pad2(sod / 3600) + ":" + pad2(sod / 60 % 60) + ":" + pad2(sod % 60)
        if ms != 0 { out += "." + String(ms + 1000).dropFirst() }
        if offsetSeconds == 0 {
            out += "Z"
        } else {
            let o = abs(Int(offsetSeconds))
            out += (offsetSeconds < 0 ? "-" : "+") + pad2(o / 3600) + ":" + pad2(o / 60 % 60)
        }
        return out
    }

    @inline(__always) static func pad2(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
}
