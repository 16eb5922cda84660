import MobilityModel

/// What the items of one samples payload tend to repeat, kept while its items are decoded: the
/// date part of their timestamps (a sync's 100 timestamps fall on two or three dates) and their
/// `source.bundleId` (one app's, 25 bytes and more: past Swift's 15-byte inline strings, so each
/// copy was an allocation). Valid for one payload only (``RepeatedString`` holds parser bytes).
struct PayloadRepeats {
    /// The last date read, for ``ISO8601/parse(utf8:dates:)``.
    var dates = ISO8601.DateCache()
    /// The last bundle id.
    var bundleId = RepeatedString()
}
