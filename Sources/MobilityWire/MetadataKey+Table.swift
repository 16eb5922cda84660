import MobilityModel

extension MetadataKey {
    /// What the decoder does with a key it knows.
    package enum Role: Sendable { case wasUserEntered, appleDeviceCalibrated, timeZone, other }

    /// The keys the product reads, and HealthKit's device keys mobility samples carry, in both
    /// spellings, to their long spelling (one shared string, so that a sample's metadata costs no
    /// key allocation: these keys are 20–40 bytes, past Swift's inline strings) and role.
    package static let table = ByteTable<(key: String, role: Role)>(
        {
            var t: [String: (key: String, role: Role)] = [:]
            let device = [
                "HKMetadataKeyDevicePlacementSide", "HKMetadataKeyExternalUUID", "HKMetadataKeyDeviceName",
                "HKMetadataKeyDeviceManufacturerName", "HKMetadataKeyDeviceSerialNumber"
            ].map { ($0, Role.other) }
            for (k, r) in [
                (wasUserEntered, Role.wasUserEntered), (appleDeviceCalibrated, .appleDeviceCalibrated), (timeZone, .timeZone),
                (syncIdentifier, .other), (syncVersion, .other)
            ] + device {
                t[k] = (k, r)
                t["HK" + k.dropFirst("HKMetadataKey".count)] = (k, r)
            }
            return t
        }())
}
