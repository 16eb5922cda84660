import MobilityModel

/// A deleted sample id the engine remembers for the allowed lateness, so that a deletion that
/// overtook its sample (across a failover, or a gateway's re-send after the deletion) still
/// wins: a sample arriving later with that id is dropped (``IngestOutcome/deleted``).
package struct Tombstone: Hashable, Sendable {
    /// The deleted sample's id.
    package var id: SampleID
    /// The local day of the user's clock when the deletion arrived (``unstamped``: the user had no
    /// clock yet; the next day close stamps it). It goes when this day folds.
    package var day: DayNumber

    /// The day of a tombstone made before the user had a clock.
    package static let unstamped = DayNumber.max

    package init(id: SampleID, day: DayNumber) {
        self.id = id
        self.day = day
    }
}

extension UserState {
    /// Whether a deletion of `id` is remembered (a linear scan of at most
    /// `maxTombstones`; only users with deletions pay it, only for new sample ids).
    func isTombstoned(_ id: SampleID) -> Bool {
        for t in tombstones where t.id == id { return true }
        return false
    }

    /// Remembers a deletion of `id` on `day`; at `limit` entries the oldest eighth goes first.
    mutating func addTombstone(_ id: SampleID, day: DayNumber, limit: Int) {
        addTombstones([id], day: day, limit: limit)
    }

    /// Remembers the deletions of `ids` on `day`, in order, as ``addTombstone(_:day:limit:)`` one
    /// after the other would, with one hash lookup an id instead of a scan of every tombstone.
    mutating func addTombstones(_ ids: [SampleID], day: DayNumber, limit: Int) {
        guard limit > 0, !ids.isEmpty else { return }
        var known = Set<SampleID>(minimumCapacity: tombstones.count + ids.count)
        for t in tombstones { known.insert(t.id) }
        for id in ids where known.insert(id).inserted {
            if tombstones.count >= limit {
                let drop = Swift.max(1, Swift.min(tombstones.count, limit / 8))
                for t in tombstones.prefix(drop) { known.remove(t.id) }
                tombstones.removeFirst(drop)
            }
            tombstones.append(Tombstone(id: id, day: day))
        }
    }

    /// Forgets the deletions of days through `through` (the days that fold: no sample of them
    /// can be accepted any more), stamps unstamped ones with `today`, and drops the sync
    /// entries that only a forgotten deletion kept.
    /// Returns whether anything changed.
    mutating func pruneTombstones(through: DayNumber, today: DayNumber) -> Bool {
        var gone: [SampleID] = [], stamped = false
        tombstones.removeAll { t in
            if t.day <= through { gone.append(t.id); return true }
            return false
        }
        for k in tombstones.indices where tombstones[k].day == Tombstone.unstamped {
            tombstones[k].day = today
            stamped = true
        }
        if !gone.isEmpty, !syncIndex.isEmpty {
            let orphans = syncIndex.filter { e in gone.contains(e.id) && locate(e.id) == nil }.map(\.id)
            if !orphans.isEmpty { syncIndex.removeAll { orphans.contains($0.id) } }
        }
        return stamped || !gone.isEmpty
    }
}
