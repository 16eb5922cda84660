import MobilityModel

extension MetricKind {
    /// `identifiers` by their bytes, built once.
    static let byBytes = ByteTable(identifiers)

    /// Looks up a metric by its identifier given as UTF-8 bytes (the decoder's hot path).
    package init?(utf8 b: UnsafeBufferPointer<UInt8>) {
        guard let k = Self.byBytes[utf8: b] else { return nil }
        self = k
    }
}
