import MobilityModel

extension MetadataKey {
    /// What the decoder does with a key it knows.
    public enum Role: Sendable { case wasUserEntered, appleDeviceCalibrated, timeZone, other }

    /// The keys the product reads, in both spellings, to their long spelling (one shared string,
    /// so that a sample's metadata costs no key allocation) and role.
    public static let table = ByteTable<(key: String, role: Role)>(
        {
            var t: [String: (key: String, role: Role)] = [:]
            for (k, r) in [
                (wasUserEntered, Role.wasUserEntered), (appleDeviceCalibrated, .appleDeviceCalibrated), (timeZone, .timeZone),
                (syncIdentifier, .other), (syncVersion, .other)
            ] {
                t[k] = (k, r)
                t["HK" + k.dropFirst("HKMetadataKey".count)] = (k, r)
            }
            return t
        }())
}
