import CSQLite
import Foundation
import MobilityModel
import Synchronization

import struct RuleEngine.StoredValue
import struct RuleEngine.UserSnapshot

extension StateStore {
    /// Reads every user and the pending outbox.
    ///
    /// Decoding states is most of a restart, so from ``parallelLoadThreshold`` users the users
    /// are read in two halves split at the median user id, the upper half on a second connection
    /// and thread (WAL readers do not block each other). Called at start, before any commit.
    /// - Parameter alertNames: the current rules' alert names: a stored alert state's rule name
    ///   equal to one of them is read as that string instance, so that restored states share the
    ///   rules' names instead of holding copies. (Aligning the states with the rules is the
    ///   engine's, in ``RuleEngine/Engine/restore(_:)``.)
    package func load(alertNames: [String] = []) throws -> (users: [UserRecord], outbox: [OutboxItem]) {
        try load(alertNames: alertNames, prepare: { $0 })
    }

    /// Reads every user and the pending outbox, each user's snapshot handed to `prepare` on the
    /// thread that read it (``parallelLoadThreshold``): the engine makes its states there
    /// (`Engine.preparer`), so that building them runs on the load's two threads too.
    package func load<Prepared: Sendable>(
        alertNames: [String] = [], prepare: @escaping @Sendable (UserSnapshot) -> Prepared
    ) throws
        -> (users: [StoredUser<Prepared>], outbox: [OutboxItem])
    {
        try lock.withLock { _ in
            let count = try db.scalarInt("SELECT count(*) FROM users")
            var split: String?
            if count >= parallelLoadThreshold, count >= 2 {
                let q = try db.prepare("SELECT user FROM users ORDER BY user LIMIT 1 OFFSET ?1")
                q.bind(1, count / 2)
                if try q.step() { split = q.text(0) }
            }
            var users: [StoredUser<Prepared>]
            if let split {
                let upper = LoadJob(db: try SQLiteDatabase(path: path), from: split, alertNames: alertNames, prepare: prepare)
                let thread = Thread { upper.run() }
                thread.name = "state-load"
                thread.start()
                let lower = Result { try StateStore.loadUsers(db, from: nil, below: split, alertNames: alertNames, prepare: prepare) }
                upper.done.wait()
                var halves = [try lower.get(), try upper.result.get()]
                users = StoredUser.concatenating(moving: &halves)
            } else {
                users = try StateStore.loadUsers(db, from: nil, below: nil, alertNames: alertNames, prepare: prepare)
            }
            var outbox: [OutboxItem] = []
            let o = try db.prepare("SELECT id, topic, payload, retain FROM outbox ORDER BY id")
            while try o.step() { outbox.append(OutboxItem(id: o.int(0), topic: o.text(1), payload: o.blob(2), retain: o.int(3) != 0)) }
            return (users, outbox)
        }
    }

    /// Users with ids in [from, below) (nil: unbounded), their heads and open-day rows.
    static func loadUsers<Prepared>(
        _ db: SQLiteDatabase, from lo: String?, below hi: String?, alertNames: [String],
        prepare: (UserSnapshot) -> Prepared
    ) throws -> [StoredUser<Prepared>] {
        var range: [String] = []
        if lo != nil { range.append("user >= ?1") }
        if hi != nil { range.append("user < ?2") }
        let filter = range.isEmpty ? "" : " WHERE " + range.joined(separator: " AND ")
        func bound(_ q: SQLiteDatabase.Statement) {
            if let lo { q.bind(1, lo) }
            if let hi { q.bind(2, hi) }
        }
        // Both queries in user order (SQLite's BINARY collation: bytes, so ids are compared as
        // bytes here too, not as Swift strings, which equate canonically equivalent text), merged as they are read:
        // each user's state is decoded, its open-day rows appended to it in one exact-size array,
        // and only then moved into the result (no lookup by user id, no copy of a state).
        var users: [StoredUser<Prepared>] = []
        let q = try db.prepare("SELECT user, applied_seq, event_now, state, event_claims FROM users" + filter + " ORDER BY user")
        bound(q)
        let d = try db.prepare("SELECT user, day, data FROM user_days" + filter + " ORDER BY user, day, chunk")
        bound(d)
        var openDays = UserRows.OpenDays()
        var row = try d.step() ? d.text(0) : nil
        while try q.step() {
            let u = q.text(0)
            // Rows of a user without a head row (none are written) are skipped.
            while let r = row, r.utf8.lexicographicallyPrecedes(u.utf8) { row = try d.step() ? d.text(0) : nil }
            let blob = q.blob(3)
            let en = sqlite3ColumnIsNull(q, 2) ? nil : Timestamp(milliseconds: q.int(2))
            let seq = UInt64(q.int(1))
            let claims = StateStore.decodeClaims(q.blob(4))
            guard !blob.isEmpty else {
                while let r = row, r.utf8.elementsEqual(u.utf8) { row = try d.step() ? d.text(0) : nil }
                users.append(StoredUser(user: u, appliedSeq: seq, eventNow: en, eventClaims: claims, state: nil))
                continue
            }
            var state = try UserRows.decodeHead(user: u, blob, alertNames: alertNames)
            openDays.reset()
            while let r = row, r.utf8.elementsEqual(u.utf8) {
                try openDays.append(day: DayNumber(truncatingIfNeeded: d.int(1)), chunk: d.blob(2), user: u)
                row = try d.step() ? d.text(0) : nil
            }
            openDays.finish(into: &state)
            users.append(StoredUser(user: u, appliedSeq: seq, eventNow: en, eventClaims: claims, state: prepare(state)))
        }
        return users
    }
}

/// One half of a parallel load, run on its own thread and connection.
///
/// Sendability: `result` is written by the loading thread before it signals `done`, and read by
/// the waiting thread only after `done`; the connection is used by the loading thread only.
private final class LoadJob<Prepared: Sendable>: @unchecked Sendable {
    let db: SQLiteDatabase
    let from: String
    let alertNames: [String]
    let prepare: @Sendable (UserSnapshot) -> Prepared
    let done = DispatchSemaphore(value: 0)
    var result: Result<[StoredUser<Prepared>], any Error> = .success([])

    init(db: SQLiteDatabase, from: String, alertNames: [String], prepare: @escaping @Sendable (UserSnapshot) -> Prepared) {
        self.db = db
        self.from = from
        self.alertNames = alertNames
        self.prepare = prepare
    }

    func run() {
        result = Result { try StateStore.loadUsers(db, from: from, below: nil, alertNames: alertNames, prepare: prepare) }
        done.signal()
    }
}
