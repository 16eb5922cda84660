/// HealthKit supersession: the newest version of a sync identifier and the sample holding it.
package struct SyncEntry: Hashable, Sendable {
    /// `SampleID` hash of the sync identifier.
    package var sync: SampleID
    /// `HKMetadataKeySyncVersion` of the sample held.
    package var version: Int64
    /// The sample holding that version.
    package var id: SampleID

    package init(sync: SampleID, version: Int64, id: SampleID) {
        self.sync = sync
        self.version = version
        self.id = id
    }
}
