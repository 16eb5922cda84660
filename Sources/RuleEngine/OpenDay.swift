import MobilityModel

/// A day that can still receive late samples: where its values are in the user's
/// `openValues` (all open days' values in one array, day after day) and what the state store
/// holds of it. 20 bytes.
package struct OpenDay: Hashable, Sendable {
    /// The local day.
    package var day: DayNumber
    /// Where the day's values start in `UserState.openValues`.
    package internal(set) var start: Int32
    /// How many values the day has (all metrics, in arrival order).
    package internal(set) var count: Int32
    /// The first value (day-relative index) changed since the state store last wrote the day;
    /// -1 when unchanged (the store rewrites from there on).
    var changedFrom: Int32 = 0
    /// How many values the state store holds for the day.
    package internal(set) var storedCount: Int32 = 0

    /// The first value index changed since the state store last wrote the day; nil when unchanged.
    package var dirtyFrom: Int? { changedFrom < 0 ? nil : Int(changedFrom) }
    /// Whether the store's copy is out of date.
    package var dirty: Bool { changedFrom >= 0 }
    /// The day's values' indices in `UserState.openValues`.
    package var range: Range<Int> { Int(start)..<Int(start + count) }

    /// Notes a change at value index `i` and after.
    @inline(__always) mutating func touch(from i: Int) {
        changedFrom = changedFrom < 0 ? Int32(i) : Swift.min(changedFrom, Int32(i))
    }
}
