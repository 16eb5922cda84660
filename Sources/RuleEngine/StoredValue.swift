import MobilityModel

/// One sample value, kept while its day is open to late data: 24 bytes (the sample's end, its
/// metric and its provenance share one word), because every user holds about a week of these.
package struct StoredValue: Hashable, Sendable {
    /// The sample's id, hashed.
    package var id: SampleID
    /// The value in SI units.
    package var value: Double
    /// The end (ms) shifted left by 8; below it the metric (7 bits) and the provenance (1 bit).
    /// Milliseconds up to ±2^55 fit: any four-digit year.
    private var tagged: Int64

    /// The sample's end (orders `last`).
    package var end: Timestamp { Timestamp(milliseconds: tagged >> 8) }
    /// What was measured.
    package var metric: MetricKind { MetricKind(rawValue: UInt8(truncatingIfNeeded: tagged) >> 1)! }
    /// Device-recorded or user-entered.
    package var provenance: Provenance { Provenance(rawValue: UInt8(truncatingIfNeeded: tagged) & 1)! }

    package init(id: SampleID, metric: MetricKind, value: Double, end: Timestamp, provenance: Provenance) {
        self.id = id
        self.value = value
        tagged = end.milliseconds << 8 | Int64(metric.rawValue) << 1 | Int64(provenance.rawValue)
    }

    /// Whether the value is of a metric, and of a provenance when one is given (one comparison of
    /// the tag byte, no enum decoding).
    @inline(__always) func matches(_ m: MetricKind, _ p: Provenance?) -> Bool {
        let tag = UInt8(truncatingIfNeeded: tagged)
        guard let p else { return tag >> 1 == m.rawValue }
        return tag == m.rawValue << 1 | p.rawValue
    }
}
