import Foundation

/// A local calendar day: days since 1970-01-01 in some time zone's wall-clock time.
public typealias DayNumber = Int32

/// Maps instants to a user's local calendar days in an IANA time zone, DST included.
///
/// A day runs from local midnight to the next local midnight, so DST days have 23 or 25 hours.
public struct LocalCalendar: Hashable, Sendable {
    /// The IANA zone.
    public let timeZone: TimeZone

    /// Creates a calendar for an IANA zone identifier (`Europe/Zurich`), or nil if unknown.
    public init?(identifier: String) {
        guard let tz = TimeZone(identifier: identifier) else { return nil }
        self.timeZone = tz
    }

    /// Creates a calendar for a zone.
    public init(timeZone: TimeZone) { self.timeZone = timeZone }

    /// UTC.
    public static let utc = LocalCalendar(timeZone: TimeZone(identifier: "UTC")!)

    /// The zone's identifier.
    public var identifier: String { timeZone.identifier }

    /// The zone's UTC offset at an instant, in seconds.
    @inlinable public func offset(at t: Timestamp) -> Int64 {
        Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(t.seconds))))
    }

    /// The local day that contains an instant.
    @inlinable public func day(of t: Timestamp) -> DayNumber {
        LocalCalendar.day(ofLocalSeconds: t.seconds + offset(at: t))
    }

    /// The day containing a local wall-clock second count.
    @inlinable public static func day(ofLocalSeconds s: Int64) -> DayNumber {
        DayNumber(s >= 0 ? s / 86_400 : (s - 86_399) / 86_400)
    }

    /// The instant of local midnight at the start of a day (the first instant of that day).
    public func startOfDay(_ d: DayNumber) -> Timestamp {
        let local = Int64(d) * 86_400
        // Two fixed-point steps settle on the offset in force at that midnight.
        var guess = local - offset(at: Timestamp(seconds: local))
        guess = local - offset(at: Timestamp(seconds: guess))
        // A midnight skipped by a DST jump: the day starts at the first instant that is in it.
        if day(of: Timestamp(seconds: guess)) < d { guess += 3600 }
        return Timestamp(seconds: guess)
    }

    /// The length of a local day in hours (23, 24 or 25 around DST changes).
    public func hours(in d: DayNumber) -> Int {
        Int((startOfDay(d + 1).seconds - startOfDay(d).seconds) / 3600)
    }
}
