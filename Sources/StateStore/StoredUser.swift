import MobilityModel

/// One user's persisted record: the engine state (`State`: a ``UserSnapshot``, or what a load's
/// `prepare` made of one) with the ingest-journal position and event clock it goes with.
package struct StoredUser<State: Sendable>: Sendable {
    /// The user id.
    package var user: String
    /// The highest journal sequence number applied to this user.
    package var appliedSeq: UInt64
    /// The user's event clock (event mode).
    package var eventNow: Timestamp?
    /// The event clock's pending claims (ms), not yet confirmed.
    package var eventClaims: [Int64]
    /// The engine state: in a commit what changed (`Engine.changes(of:)`), from a load all of
    /// it; nil for users that only ever sent rejected messages.
    package var state: State?

    package init(user: String, appliedSeq: UInt64, eventNow: Timestamp?, eventClaims: [Int64] = [], state: State?) {
        self.user = user
        self.appliedSeq = appliedSeq
        self.eventNow = eventNow
        self.eventClaims = eventClaims
        self.state = state
    }

    /// Moves the records of `parts` into one array, leaving each part holding empty records:
    /// `+=` would retain every reference a state holds and release it again with the part
    /// (a fifth of a 100 k-user restart).
    static func concatenating(moving parts: inout [[StoredUser]]) -> [StoredUser] {
        let total = parts.reduce(0) { $0 + $1.count }
        let empty = StoredUser(user: "", appliedSeq: 0, eventNow: nil, state: nil)
        return Array(unsafeUninitializedCapacity: total) { buffer, initialized in
            initialized = 0
            for p in parts.indices {
                parts[p].withUnsafeMutableBufferPointer { part in
                    guard let from = part.baseAddress, part.count > 0 else { return }
                    (buffer.baseAddress! + initialized).moveInitialize(from: from, count: part.count)
                    from.initialize(repeating: empty, count: part.count)
                    initialized += part.count
                }
            }
        }
    }
}
