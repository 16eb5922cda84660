import Synchronization

/// Where a sample came from, as far as the rules care.
package enum Provenance: UInt8, Hashable, Sendable, CustomStringConvertible {
    /// Recorded by an Apple device (source bundle `com.apple.health…`) and not user-entered.
    case device
    /// Entered by a person (`HKMetadataKeyWasUserEntered`) or written by a non-Apple source, e.g. a clinic app.
    case userEntered

    /// `device` or `user_entered`, as rules spell it.
    package var description: String { self == .device ? "device" : "user_entered" }
}

/// A metadata value as HealthKit carries it.
package enum MetadataValue: Hashable, Sendable, CustomStringConvertible {
    case string(String)
    case number(Double)
    case bool(Bool)

    /// The value read as a boolean: true/false, 1/0, "1"/"0", "true"/"false"; nil otherwise.
    package var asBool: Bool? {
        switch self {
        case .bool(let b): b
        case .number(let n): n == 1 ? true : n == 0 ? false : nil
        case .string(let s): s == "1" || s == "true" ? true : s == "0" || s == "false" ? false : nil
        }
    }

    /// The value read as a number (numeric strings included).
    package var asNumber: Double? {
        switch self {
        case .bool(let b): b ? 1 : 0
        case .number(let n): n
        case .string(let s): Double(s)
        }
    }

    /// The value as text: a string as is, a whole number without a decimal point, `true`/`false`.
    package var description: String {
        switch self {
        case .string(let s): s
        case .number(let n): n == n.rounded() && abs(n) < 1e15 ? String(Int64(n)) : String(n)
        case .bool(let b): b ? "true" : "false"
        }
    }
}

/// Canonical HealthKit metadata key names.
package enum MetadataKey {
    /// The key of the boolean saying a person entered the sample by hand.
    package static let wasUserEntered = "HKMetadataKeyWasUserEntered"
    /// The key of the boolean saying the Apple Watch was calibrated when it recorded the sample.
    package static let appleDeviceCalibrated = "HKMetadataKeyAppleDeviceCalibrated"
    /// The key of the IANA time zone the sample was recorded in.
    package static let timeZone = "HKMetadataKeyTimeZone"
    /// The key of the writer's own id for a sample, shared by its later versions.
    package static let syncIdentifier = "HKMetadataKeySyncIdentifier"
    /// The key of a synced sample's version: a higher version replaces the sample of the same sync id, a lower or equal one is stale.
    package static let syncVersion = "HKMetadataKeySyncVersion"

    /// Maps the short export spelling (`HKWasUserEntered`) to the long one (`HKMetadataKeyWasUserEntered`).
    @inlinable package static func canonical(_ key: String) -> String {
        if key.hasPrefix("HK") && !key.hasPrefix("HKMetadataKey") { return "HKMetadataKey" + key.dropFirst(2) }
        return key
    }
}

/// One validated HealthKit quantity sample, its value normalised to SI.
package struct Sample: Hashable, Sendable {
    /// The sample's UUID (unique per user).
    package var id: String
    /// What was measured.
    package var metric: MetricKind
    /// The value in SI units (m/s, m, fraction 0–1, m³/(kg·s)).
    package var value: Double
    /// Start of the measurement.
    package var start: Timestamp
    /// End of the measurement; the sample belongs to the local day of its end.
    package var end: Timestamp
    /// The UTC offset the end timestamp was written with, in seconds.
    package var utcOffset: Int32
    /// The sample's own IANA zone (`timeZone` field or `HKMetadataKeyTimeZone`), if any.
    package var timeZone: String?
    /// Device-recorded or user-entered.
    package var provenance: Provenance
    /// The source bundle id, if given.
    package var bundleId: String?
    /// `HKMetadataKeyAppleDeviceCalibrated`, if present.
    package var calibrated: Bool?
    /// Other metadata, keys in canonical long form.
    package var metadata: [String: MetadataValue]

    @inlinable package init(
        id: String, metric: MetricKind, value: Double, start: Timestamp, end: Timestamp,
        utcOffset: Int32 = 0, timeZone: String? = nil, provenance: Provenance = .device,
        bundleId: String? = nil, calibrated: Bool? = nil, metadata: [String: MetadataValue] = [:]
    ) {
        self.id = id
        self.metric = metric
        self.value = value
        self.start = start
        self.end = end
        self.utcOffset = utcOffset
        self.timeZone = timeZone
        self.provenance = provenance
        self.bundleId = bundleId
        self.calibrated = calibrated
        self.metadata = metadata
    }

    /// A metadata value by key. Samples carry a few keys at most, and comparing a few short keys
    /// is several times cheaper than hashing one (SipHash) for a dictionary lookup.
    @inlinable package func metadataValue(_ key: String) -> MetadataValue? {
        if metadata.count > 8 { return metadata[key] }
        let n = key.utf8.count
        for (k, v) in metadata where k.utf8.count == n && k == key { return v }
        return nil
    }

    /// `HKMetadataKeySyncIdentifier`, if present.
    package var syncIdentifier: String? {
        if case .string(let s)? = metadataValue(MetadataKey.syncIdentifier) { return s }
        return nil
    }

    /// `HKMetadataKeySyncVersion`, if present.
    package var syncVersion: Int64? { metadataValue(MetadataKey.syncVersion)?.asNumber.map { Int64($0) } }

    /// The local day of the sample (the day of its end): its own IANA zone if it carries one, else
    /// the UTC offset it was written with (a phone writes its local offset), else — for timestamps
    /// written in UTC (`Z`) — the user's home calendar.
    package func localDay(default calendar: LocalCalendar?) -> DayNumber {
        if let tz = timeZone, let cal = LocalCalendar.cached(tz) { return cal.day(of: end) }
        if utcOffset == 0, let cal = calendar { return cal.day(of: end) }
        return LocalCalendar.day(ofLocalSeconds: end.seconds + Int64(utcOffset))
    }
}

extension LocalCalendar {
    private static let cache = ZoneCache()

    /// A calendar for an IANA identifier, cached (zone lookups allocate).
    package static func cached(_ identifier: String) -> LocalCalendar? { cache.get(identifier) }
}

final class ZoneCache: Sendable {
    private let zones = Mutex<[String: LocalCalendar?]>([:])
    func get(_ id: String) -> LocalCalendar? {
        if let hit = zones.withLock({ $0[id] }) { return hit }
        let cal = LocalCalendar(identifier: id)
        zones.withLock { if $0.count < 4096 { $0[id] = cal } }
        return cal
    }
}
