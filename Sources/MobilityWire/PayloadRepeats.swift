import CSimdJSON
import MobilityModel

#if canImport(Glibc)
    import Glibc
#endif

/// What the items of one samples payload tend to repeat, kept while its items are decoded: the
/// date part of their timestamps (a sync's 100 timestamps fall on two or three dates), their
/// `source.bundleId` (one app's, 25 bytes and more: past Swift's 15-byte inline strings, so each
/// copy was an allocation) and their metadata (a phone's sync repeats
/// `{"HKMetadataKeyDevicePlacementSide":2}` on most samples that carry any). Valid for one payload
/// only (``RepeatedString`` and ``RepeatedMetadata`` hold parser bytes).
struct PayloadRepeats {
    /// The last date read, for ``ISO8601/parse(utf8:dates:)``.
    var dates = ISO8601.DateCache()
    /// The last bundle id.
    var bundleId = RepeatedString()
    /// The last metadata object decoded.
    var metadata = RepeatedMetadata()
}

/// A sample's `metadata` as the decoder keeps it: the values under their canonical keys, and
/// what it reads itself from the keys it knows.
struct DecodedMetadata {
    /// The values, keys in canonical long form (the first of a duplicated key wins).
    var values: [String: MetadataValue] = [:]
    /// `HKMetadataKeyTimeZone`, when a string.
    var zone: String?
    /// `HKMetadataKeyWasUserEntered` read as a boolean (false when absent or not a boolean).
    var userEntered = false
    /// `HKMetadataKeyAppleDeviceCalibrated` read as a boolean, if present.
    var calibrated: Bool?
}

/// The last metadata object of a payload that decoded, with the members it was read from, so
/// that the next item whose members are the same bytes shares its dictionary (a retain: the same
/// storage, copy-on-write) instead of allocating and hashing another. Members compare by their
/// key bytes, value types and value bytes (a number by its bits), so a shared result is exactly
/// what decoding the members again would give.
struct RepeatedMetadata {
    private var first: UnsafePointer<mw_json_member>?
    private var count = 0
    // Optional, so that a payload without metadata (one sample a message, mostly) destroys no
    // dictionary: a `DecodedMetadata()` here cost every payload ~90 instructions.
    private var last: DecodedMetadata?

    /// The decoded metadata of `members` when they are the same as the last one's.
    func lookup(_ members: UnsafeBufferPointer<mw_json_member>) -> DecodedMetadata? {
        guard let a = first, let b = members.baseAddress, members.count == count, let last else { return nil }
        for k in 0..<count where !RepeatedMetadata.same(a[k], b[k]) { return nil }
        return last
    }

    /// Notes the decoded metadata of `members`.
    mutating func note(_ members: UnsafeBufferPointer<mw_json_member>, _ decoded: DecodedMetadata) {
        first = members.baseAddress
        count = members.count
        last = decoded
    }

    @inline(__always) private static func same(_ x: mw_json_member, _ y: mw_json_member) -> Bool {
        guard same(x.key, y.key) else { return false }
        return same(x.value, y.value)
    }

    @inline(__always) private static func same(_ x: mw_json_field, _ y: mw_json_field) -> Bool {
        guard x.type == y.type else { return false }
        switch Int(x.type) {
        case Int(MW_STRING.rawValue): return x.len == y.len && (x.len == 0 || memcmp(x.str, y.str, Int(x.len)) == 0)
        case Int(MW_NUMBER.rawValue): return x.number.bitPattern == y.number.bitPattern
        case Int(MW_BOOL.rawValue): return x.boolean == y.boolean
        default: return false  // not a value a decoded metadata holds: decoded again (and refused)
        }
    }
}
