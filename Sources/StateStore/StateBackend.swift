import struct RuleEngine.UserSnapshot

/// What the daemon needs of durable state, whatever holds it: ``StateStore`` (SQLite) today; a
/// second backend (PostgreSQL, issue 19) conforms to this. A backend persists each user's
/// ``StateStore/UserRecord`` (the engine's `UserSnapshot` plus the journal position and event
/// clock) together with the outbox in one transaction, and never needs the engine's insides.
public protocol StateBackend: AnyObject, Sendable {
    /// Every user's record (their whole snapshot, handed to `prepare` on the thread that read it)
    /// and the pending outbox, oldest first. `alertNames`: the rules' alert names, to read equal
    /// stored names as these instances.
    func load<Prepared: Sendable>(alertNames: [String], prepare: @escaping @Sendable (UserSnapshot) -> Prepared) throws
        -> (users: [StoredUser<Prepared>], outbox: [StateStore.OutboxItem])
    /// Writes the users' changes (``StateStore/UserRecord/state`` as `Engine.changes(of:)` gives
    /// them), appends `outbox` and removes the `acknowledged` outbox ids, atomically; returns the
    /// new items' ids in order.
    func commit(users: [StateStore.UserRecord], outbox: [StateStore.OutboxItem], acknowledged: [Int64]) throws -> [Int64]
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
}

extension StateStore: StateBackend {}
