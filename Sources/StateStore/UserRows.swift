import MobilityModel

import struct RuleEngine.StoredValue
import struct RuleEngine.UserSnapshot

/// How a user's ``UserSnapshot`` is laid out in rows, whatever database holds them: a head (the
/// snapshot without its open days, ``UserStateCodec``) and each open day's values in chunks of
/// ``StateStore/chunkSize``. Shared by the SQLite store and the PostgreSQL backend, so that both
/// hold the same bytes and rewrite the same rows.
package enum UserRows {
    /// The head row's bytes: the snapshot without its open days.
    package static func head(_ s: UserSnapshot) -> [UInt8] { UserStateCodec.encode(s, withOpenDays: false) }

    /// Reads a head row; the open days are added by an ``OpenDays`` reader.
    package static func decodeHead(user: String, _ bytes: [UInt8], alertNames: [String]) throws(UserStateDecodingError) -> UserSnapshot {
        try UserStateCodec.decode(user: user, bytes, alertNames: alertNames)
    }

    /// The chunk rows a commit writes for `s` (what `Engine.changes(of:)` gave): for each changed
    /// open day, `write(day, chunk, bytes)` for the chunks from the first changed value on, then
    /// `deleteFrom(day, chunk)` when the day holds fewer chunks than the store did.
    package static func forEachChange<E: Error>(
        of s: UserSnapshot, write: (DayNumber, Int, [UInt8]) throws(E) -> Void, deleteFrom: (DayNumber, Int) throws(E) -> Void
    ) throws(E) {
        try forEachChange(of: s, write: { (day, c, bytes, _) throws(E) in try write(day, c, bytes) }, deleteFrom: deleteFrom)
    }

    /// ``forEachChange(of:write:deleteFrom:)`` telling `write` whether the store held the chunk
    /// before (the day's stored values reach into it), so that it can be updated in place.
    package static func forEachChange<E: Error>(
        of s: UserSnapshot, write: (DayNumber, Int, [UInt8], Bool) throws(E) -> Void, deleteFrom: (DayNumber, Int) throws(E) -> Void
    ) throws(E) {
        for day in s.openDays {
            guard let from = day.changedFrom else { continue }
            let values = s.values(of: day)
            let chunks = StateStore.chunks(values.count)
            let stored = StateStore.chunks(day.storedCount)
            if from / StateStore.chunkSize < chunks {
                for c in (from / StateStore.chunkSize)..<chunks { try write(day.day, c, UserStateCodec.encode(day: values, chunk: c), c < stored) }
            }
            if StateStore.chunks(day.storedCount) > chunks { try deleteFrom(day.day, chunks) }
        }
    }

    /// The event clock's pending claims as stored (little-endian 64-bit ms each).
    package static func encodeClaims(_ claims: [Int64]) -> [UInt8] { StateStore.encodeClaims(claims) }

    /// Reads stored claims.
    package static func decodeClaims(_ b: [UInt8]) -> [Int64] { StateStore.decodeClaims(b) }

    /// Gathers one user's chunk rows, in day and chunk order, and adds them to the head's
    /// snapshot as its open days (one exact-size array of values). Reusable across users.
    package struct OpenDays {
        private var scratch: [StoredValue] = []
        private var days: [(day: DayNumber, end: Int)] = []

        /// An empty reader.
        package init() {}

        /// Starts the next user.
        package mutating func reset() {
            scratch.removeAll(keepingCapacity: true)
            days.removeAll(keepingCapacity: true)
        }

        /// Adds a chunk row of `day` (rows in day and chunk order).
        package mutating func append(day: DayNumber, chunk: [UInt8], user: String) throws(UserStateDecodingError) {
            try UserStateCodec.decodeChunk(chunk, user: user, into: &scratch)
            if days.last?.day == day { days[days.count - 1].end = scratch.count } else { days.append((day, scratch.count)) }
        }

        /// Adds the gathered days to `state`: rows are days the store holds as they are
        /// (unchanged, all values stored).
        package func finish(into state: inout UserSnapshot) {
            guard !days.isEmpty else { return }
            let base = state.openValues.count
            if base == 0 { state.openValues = Array(scratch) } else { state.openValues += scratch }
            state.openDays.reserveCapacity(state.openDays.count + days.count)
            var lo = 0
            for (day, end) in days {
                state.openDays.append(UserSnapshot.OpenDay(day: day, start: base + lo, count: end - lo, changedFrom: nil, storedCount: end - lo))
                lo = end
            }
        }
    }
}
