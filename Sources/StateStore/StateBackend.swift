import MobilityModel

import struct RuleEngine.UserSnapshot

/// What the daemon needs of durable state, whatever holds it: ``StateStore`` (SQLite, one machine)
/// and `PostgresStore` (PostgreSQL, shared by instances, fenced) conform to this. A backend persists each user's
/// ``StateStore/UserRecord`` (the engine's `UserSnapshot` plus the journal position and event
/// clock) together with the outbox in one transaction, and never needs the engine's insides.
package protocol StateBackend: AnyObject, Sendable {
    /// Every user's record (their whole snapshot, handed to `prepare` on the thread that read it)
    /// and the pending outbox, oldest first. `alertNames`: the rules' alert names, to read equal
    /// stored names as these instances.
    func load<Prepared: Sendable>(
        alertNames: [String], prepare: @escaping @Sendable (UserSnapshot) -> Prepared
    ) throws
        -> (users: [StoredUser<Prepared>], outbox: [StateStore.OutboxItem])
    /// Writes the users' changes (``StateStore/UserRecord/state`` as `Engine.changes(of:)` gives
    /// them), appends `outbox`, removes the `acknowledged` outbox ids and records the `history`
    /// rows (a series point replacing its day's earlier value), atomically; returns the new items'
    /// ids in order.
    func commit(users: [StateStore.UserRecord], outbox: [StateStore.OutboxItem], acknowledged: [Int64], history: [HistoryRecord]) throws -> [Int64]
    /// ``commit(users:outbox:acknowledged:history:)`` with care-staff changes of the users' state
    /// (a timeline entry entered by staff): each one's audit row is appended, numbered, and the
    /// outputs it announces are appended after `outbox`, in the same transaction. Returns
    /// `outbox`'s ids in order and the announcing items with theirs.
    ///
    /// `streamSequences`: how far partitions' input is committed in the stream it is consumed
    /// from (partition → stream sequence; a partition's recorded sequence never moves back),
    /// recorded in the same transaction, so that users' state and the position of the input it
    /// applied are committed together. Only a backend that keeps stream positions (PostgreSQL)
    /// takes any.
    func commit(
        users: [StateStore.UserRecord], outbox: [StateStore.OutboxItem], acknowledged: [Int64], history: [HistoryRecord], audited: [AuditedChange],
        streamSequences: [Int: UInt64]
    ) throws -> (ids: [Int64], announced: [StateStore.OutboxItem])
    /// Commits weekly reports: their `history` rows (replacing the due markers) and `outbox`
    /// items, then prunes the users' history as ``pruneHistory(_:)`` does; returns the items' ids
    /// in order. ``StateStore`` does it in one transaction; the default (PostgreSQL) runs
    /// ``commit(users:outbox:acknowledged:history:)``, then ``pruneHistory(_:)``; a prune lost to a
    /// crash between the two, or that fails, is done by the user's next report, which prunes from
    /// a later day, and does not fail the call (the reports are committed).
    func commitReports(outbox: [StateStore.OutboxItem], history: [HistoryRecord], prune: [HistoryPrune]) throws -> [Int64]
    /// The care-team history of a user from `from` through `through` (series in SI units, alert
    /// episodes), with the whole timeline; never waits for a commit.
    func history(of user: String, from: DayNumber, through: DayNumber) throws -> UserHistory
    /// The weekly report of `week` (`2026-W10`), or the latest; the digest's JSON.
    func weeklyReport(of user: String, week: String?) throws -> (week: String, payload: [UInt8])?
    /// The weeks a user has reports for, newest first.
    func reportWeeks(of user: String) throws -> [String]
    /// Weekly reports marked due and not built yet.
    func dueReports() throws -> [(user: String, week: String)]
    /// Deletes history before each user's `keepFrom` and reports before `reportsFrom`.
    @discardableResult func pruneHistory(_ users: [(user: String, keepFrom: DayNumber, reportsFrom: DayNumber)]) throws -> Int
    /// Removes acknowledged outbox items.
    func acknowledge(_ ids: [Int64]) throws
    /// Moves refused outbox items to the dead letters; returns how many dead letters there are.
    @discardableResult func park(_ items: [(id: Int64, reason: String)], at: Int64) throws -> Int
    /// The parked outputs, oldest first (topics and reasons only).
    func deadLetters() throws -> [StateStore.DeadLetter]
    /// Reads a metadata value.
    func meta(_ key: String) throws -> String?
    /// Writes a metadata value.
    func setMeta(_ key: String, _ value: String) throws
    /// Records an acknowledgement with its audit row and outputs, atomically (fails if the instance is already acknowledged).
    func recordAcknowledgement(
        _ a: StoredAcknowledgement, audit: AuditEntry, outbox: (AuditEntry) -> [StateStore.OutboxItem]
    ) throws
        -> (seq: Int64, outbox: [StateStore.OutboxItem])
    /// The acknowledgements of instances still firing.
    func alertAcknowledgements() throws -> [StoredAcknowledgement]
    /// Forgets the acknowledgements of resolved instances.
    func clearAcknowledgements(_ alerts: [String]) throws
    /// The last recorded firing payload of an alert instance (nil without history).
    func firingPayload(user: String, alert: String) throws -> [UInt8]?
    /// The audit trail, oldest first.
    func auditTrail(limit: Int) throws -> [AuditEntry]
    /// `user`'s audit rows of `action`, oldest first (at most the last `limit`), read through an
    /// index by user: as fast on a trail of millions of rows as on a short one.
    func auditTrail(of user: String, action: String, limit: Int) throws -> [AuditEntry]
    /// Records a new silence with its audit row and outputs, atomically (fails if its id exists).
    func recordSilence(_ s: Silence, audit: AuditEntry, outbox: (AuditEntry) -> [StateStore.OutboxItem]) throws -> [StateStore.OutboxItem]
    /// Removes a silence with its audit row and outputs, atomically.
    func expireSilence(id: String, audit: AuditEntry, outbox: (AuditEntry) -> [StateStore.OutboxItem]) throws -> [StateStore.OutboxItem]
    /// The stored silences, and the ids of rows that no longer parse.
    func silences() throws -> (silences: [Silence], unreadable: [String])
    /// Where the state is, for logs: a path, or a database named without credentials.
    var location: String { get }
    /// Housekeeping off the commit path, from a timer (SQLite: copies the WAL into the database file).
    func checkpoint() throws
    /// Whether ``checkpoint()`` has anything to do: the daemon runs its timer only then.
    var needsCheckpoints: Bool { get }
}

extension StateBackend {
    /// ``commit(users:outbox:acknowledged:history:)``, then ``pruneHistory(_:)`` in a transaction
    /// of its own. Once the reports are committed they are not due any more, so a prune that fails
    /// does not fail the call (the caller would build and publish them again): it only deletes rows
    /// older than the reports keep, and the next week's prune of the user deletes them.
    package func commitReports(outbox: [StateStore.OutboxItem], history: [HistoryRecord], prune: [HistoryPrune]) throws -> [Int64] {
        let ids = try commit(users: [], outbox: outbox, acknowledged: [], history: history)
        _ = try? pruneHistory(prune)
        return ids
    }
}

extension StateBackend {
    /// ``commit(users:outbox:acknowledged:history:audited:streamSequences:)`` recording no stream position.
    package func commit(
        users: [StateStore.UserRecord], outbox: [StateStore.OutboxItem], acknowledged: [Int64], history: [HistoryRecord], audited: [AuditedChange]
    ) throws -> (ids: [Int64], announced: [StateStore.OutboxItem]) {
        try commit(users: users, outbox: outbox, acknowledged: acknowledged, history: history, audited: audited, streamSequences: [:])
    }
}

extension StateStore: StateBackend {
    /// The database file's path.
    package var location: String { path }

    /// The WAL is copied into the database file off the commit path.
    package var needsCheckpoints: Bool { true }

    /// ``commit(users:outbox:acknowledged:history:audited:)``; the SQLite store keeps no stream
    /// positions (the JetStream intake commits to PostgreSQL), and refuses any.
    package func commit(
        users: [UserRecord], outbox: [OutboxItem], acknowledged: [Int64], history: [HistoryRecord], audited: [AuditedChange],
        streamSequences: [Int: UInt64]
    ) throws -> (ids: [Int64], announced: [OutboxItem]) {
        guard streamSequences.isEmpty else {
            throw SQLiteError(code: 21, message: "the SQLite store keeps no stream positions: consuming from JetStream needs the PostgreSQL store")
        }
        return try commit(users: users, outbox: outbox, acknowledged: acknowledged, history: history, audited: audited)
    }
}
