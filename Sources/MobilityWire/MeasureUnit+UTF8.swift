import MobilityModel

extension MeasureUnit {
    /// `healthKitUnits` by their bytes, built once.
    static let healthKitByBytes = ByteTable(healthKitUnits)

    /// Looks up a HealthKit unit string given as UTF-8 bytes (the decoder's hot path).
    package static func healthKit(utf8 b: UnsafeBufferPointer<UInt8>) -> MeasureUnit? { healthKitByBytes[utf8: b] }
}
