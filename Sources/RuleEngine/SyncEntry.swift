/// HealthKit supersession: the newest version of a sync identifier and the sample holding it.
public struct SyncEntry: Hashable, Sendable {
    /// `SampleID` hash of the sync identifier.
    public var sync: SampleID
    /// `HKMetadataKeySyncVersion` of the sample held.
    public var version: Int64
    /// The sample holding that version.
    public var id: SampleID

    /// Creates an entry.
    public init(sync: SampleID, version: Int64, id: SampleID) {
        self.sync = sync
        self.version = version
        self.id = id
    }
}
