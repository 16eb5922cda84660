import Foundation

/// A local calendar day: days since 1970-01-01 in some time zone's wall-clock time.
package typealias DayNumber = Int32

/// Maps instants to a user's local calendar days in an IANA time zone, DST included.
///
/// A day runs from local midnight to the next local midnight, so DST days have 23 or 25 hours.
package struct LocalCalendar: Hashable, Sendable {
    /// The IANA zone.
    package let timeZone: TimeZone
    /// The zone's offsets as a transition table: the hot path (a sample's local day) reads it
    /// without the lock and the ICU call behind `TimeZone.secondsFromGMT(for:)`.
    @usableFromInline let offsets: ZoneOffsets

    /// Creates a calendar for an IANA zone identifier (`Europe/Zurich`), or nil if unknown.
    package init?(identifier: String) {
        guard let tz = TimeZone(identifier: identifier) else { return nil }
        self.init(timeZone: tz)
    }

    /// Creates a calendar for a zone.
    package init(timeZone: TimeZone) {
        self.timeZone = timeZone
        self.offsets = ZoneOffsets(timeZone)
    }

    /// Equal when the time zones are equal.
    package static func == (a: LocalCalendar, b: LocalCalendar) -> Bool { a.timeZone == b.timeZone }
    /// Hashes the time zone (consistent with `==`).
    package func hash(into h: inout Hasher) { h.combine(timeZone) }

    /// UTC.
    package static let utc = LocalCalendar(timeZone: TimeZone(identifier: "UTC")!)

    /// A calendar of a fixed UTC offset (`GMT+1100`: no daylight saving time), cached.
    package static func cached(utcOffsetSeconds: Int) -> LocalCalendar? {
        TimeZone(secondsFromGMT: utcOffsetSeconds).flatMap { cached($0.identifier) }
    }

    /// The zone's identifier.
    package var identifier: String { timeZone.identifier }

    /// The zone's UTC offset at an instant, in seconds.
    @inlinable package func offset(at t: Timestamp) -> Int64 {
        if let o = offsets.offset(at: t.seconds) { return o }
        return Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(t.seconds))))
    }

    /// The local day that contains an instant.
    @inlinable package func day(of t: Timestamp) -> DayNumber {
        LocalCalendar.day(ofLocalSeconds: t.seconds + offset(at: t))
    }

    /// The day containing a local wall-clock second count.
    @inlinable package static func day(ofLocalSeconds s: Int64) -> DayNumber {
        DayNumber(s >= 0 ? s / 86_400 : (s - 86_399) / 86_400)
    }

    /// The instant of local midnight at the start of a day (the first instant of that day).
    package func startOfDay(_ d: DayNumber) -> Timestamp {
        let local = Int64(d) * 86_400
        // Two fixed-point steps settle on the offset in force at that midnight.
        var guess = local - offset(at: Timestamp(seconds: local))
        guess = local - offset(at: Timestamp(seconds: guess))
        // A midnight skipped by a DST jump: the day starts at the first instant that is in it.
        if day(of: Timestamp(seconds: guess)) < d { guess += 3600 }
        return Timestamp(seconds: guess)
    }

    /// The length of a local day in hours (23, 24 or 25 around DST changes).
    package func hours(in d: DayNumber) -> Int {
        Int((startOfDay(d + 1).seconds - startOfDay(d).seconds) / 3600)
    }
}

/// A zone's UTC offsets from 1900 to 2100 as a sorted table of transitions, built once per zone
/// from `TimeZone.nextDaylightSavingTimeTransition(after:)` (ICU's transitions: daylight saving
/// and changes of standard offset alike). Immutable, so shared between threads without a lock.
@usableFromInline final class ZoneOffsets: Sendable {
    /// The instants (Unix seconds) from which each offset applies; the first is the table's start.
    @usableFromInline let starts: [Int64]
    /// The offset in force from each start, in seconds.
    @usableFromInline let offsets: [Int32]
    /// The end of the table (exclusive); instants outside [starts[0], end) ask the zone.
    @usableFromInline let end: Int64

    static let from: Int64 = -2_208_988_800  // 1900-01-01T00:00:00Z
    static let until: Int64 = 4_102_444_800  // 2100-01-01T00:00:00Z

    init(_ tz: TimeZone) {
        var starts = [ZoneOffsets.from]
        var offsets = [Int32(tz.secondsFromGMT(for: Date(timeIntervalSince1970: Double(ZoneOffsets.from))))]
        var t = Date(timeIntervalSince1970: Double(ZoneOffsets.from))
        while starts.count < 4096, let next = tz.nextDaylightSavingTimeTransition(after: t), next.timeIntervalSince1970 < Double(ZoneOffsets.until) {
            let o = Int32(tz.secondsFromGMT(for: next))
            if o != offsets.last { starts.append(Int64(next.timeIntervalSince1970.rounded(.down))); offsets.append(o) }
            t = next
        }
        self.starts = starts
        self.offsets = offsets
        self.end = starts.count < 4096 ? ZoneOffsets.until : starts.last!
    }

    /// The offset at an instant, or nil outside the table.
    @inlinable func offset(at s: Int64) -> Int64? {
        guard s >= starts[0], s < end else { return nil }
        // The last start at or before s (binary search; most zones have a few hundred entries).
        var lo = 0, hi = starts.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) >> 1
            if starts[mid] <= s { lo = mid } else { hi = mid - 1 }
        }
        return Int64(offsets[lo])
    }
}
