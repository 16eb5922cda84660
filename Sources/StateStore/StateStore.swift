import CSQLite
import Foundation
import MobilityModel
import Synchronization

import struct RuleEngine.StoredValue
import struct RuleEngine.UserSnapshot

/// Durable engine state on SQLite (WAL): per-user state with the ingest-journal position it has
/// applied, and an outbox of outputs not yet acknowledged by the broker, committed together.
///
/// Sendability: the connection is only used while holding `lock`.
package final class StateStore: @unchecked Sendable {
    /// The schema version this build writes; older stores are migrated on open.
    package static let schemaVersion = 7
    static let migrations: [String] = [
        // 0 → 1
        """
        CREATE TABLE users (user TEXT PRIMARY KEY, applied_seq INTEGER NOT NULL, event_now INTEGER, state BLOB);
        CREATE TABLE outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL, payload BLOB NOT NULL, retain INTEGER NOT NULL);
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        """,
        // 1 → 2: each user's days still open to late data in rows of their own (chunks of 64
        // values), so that a commit writes what changed instead of the user's whole raw history.
        """
        CREATE TABLE user_days (user TEXT NOT NULL, day INTEGER NOT NULL, chunk INTEGER NOT NULL, data BLOB NOT NULL,
                                PRIMARY KEY (user, day, chunk)) WITHOUT ROWID;
        """,
        // 2 → 3: outputs the broker refused for good (an ACL denial, a packet too large), parked
        // here instead of being retried forever ahead of every later output.
        """
        CREATE TABLE dead_letters (id INTEGER PRIMARY KEY, topic TEXT NOT NULL, payload BLOB NOT NULL, retain INTEGER NOT NULL,
                                   reason TEXT NOT NULL, at INTEGER NOT NULL);
        """,
        // 3 → 4: the event clock's pending claims (EventClock), little-endian 64-bit ms each.
        """
        ALTER TABLE users ADD COLUMN event_claims BLOB;
        """,
        // 4 → 5: the care-team history (series points, alert transitions, timeline, weekly reports).
        StateStore.historyMigration,
        // 5 → 6: care-staff acknowledgements of firing alerts and the audit trail.
        StateStore.acknowledgementsMigration,
        // 6 → 7: care-staff silences; audit rows say what a silence covers.
        StateStore.silencesMigration
    ]

    let db: SQLiteDatabase
    let lock = Mutex<Void>(())
    /// Open days are stored as chunks of this many values, one `user_days` row each, so that a
    /// commit rewrites only the chunks from the first value that changed.
    package static let chunkSize = 64
    static func chunks(_ values: Int) -> Int { (values + chunkSize - 1) / chunkSize }
    /// The commit path's statements, prepared on first use (used only under `lock`).
    private var statements = [SQLiteDatabase.Statement?](repeating: nil, count: CommitSQL.allCases.count)
    /// A second connection for checkpoints off the commit path (used only under `checkpointLock`).
    private var checkpointer: SQLiteDatabase?
    private let checkpointLock = Mutex<Void>(())
    /// A connection for history reads (reports, the HTTP API), so that they never wait for a
    /// commit (WAL readers see the last committed state); used only under `readerLock`.
    private var reader: HistoryReader?
    private let readerLock = Mutex<Void>(())
    /// Series names' ids in `history_series`, as the commit path has seen them.
    let seriesIDs = Mutex(SeriesIDs())
    /// Where the database file is.
    package let path: String

    /// One user's persisted record, its engine state as a snapshot.
    package typealias UserRecord = StoredUser<UserSnapshot>

    /// An output waiting for the broker's acknowledgement.
    package struct OutboxItem: Sendable {
        /// The row id (0 before it is stored).
        package var id: Int64
        /// The MQTT topic.
        package var topic: String
        /// The payload bytes.
        package var payload: [UInt8]
        /// Whether it is published retained.
        package var retain: Bool

        /// Creates an item (the id is assigned on commit).
        package init(id: Int64 = 0, topic: String, payload: [UInt8], retain: Bool) {
            self.id = id
            self.topic = topic
            self.payload = payload
            self.retain = retain
        }
    }

    /// Opens (creating or migrating) the store at `path`.
    ///
    /// With `autoCheckpoint` off, committing never copies the WAL into the database file (SQLite
    /// does that, with an fsync, inside whichever commit crosses 1000 WAL pages: measured as the
    /// ~4 ms p99 of alert latency); the owner calls ``checkpoint()`` from another thread instead,
    /// which starts the WAL over once it holds `walRestartFrames` frames.
    ///
    /// The database file is created 0600 before SQLite opens it (SQLite gives its `-wal` and
    /// `-shm` files the database file's mode), and looser modes left by an older version are
    /// tightened: the store holds health data.
    package init(path: String, autoCheckpoint: Bool = true, walRestartFrames: Int64 = 4096) throws(SQLiteError) {
        self.path = path
        self.walRestartFrames = walRestartFrames
        do {
            try PrivateFiles.prepareFile(path)
            for suffix in ["-wal", "-shm", "-journal"] { try PrivateFiles.tightenIfPresent(path + suffix) }
        } catch { throw SQLiteError(code: -1, message: error.description) }
        db = try SQLiteDatabase(path: path)
        // 8 KiB pages for a new store (a no-op on an existing one, whose pages keep their size): an
        // open day's chunk row (up to 64 values, 1.7 KB) then fits in its b-tree page instead of
        // spilling to an overflow page, which SQLite allows from 1 002 bytes with 4 KiB pages.
        try db.exec("PRAGMA page_size=8192; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")
        // A 32 MiB page cache for the committing connection (SQLite's default is 2 MiB): a sync
        // batch touches more pages than 2 MiB, so SQLite read pages back from the file and spilled
        // dirty ones to the WAL mid-transaction, writing some twice. Measured on the sync leg
        // (docs/benchmarks.md, tenth pass): its reads 7 990 → 0, its WAL writes 12 778 → 6 528 in 3 s.
        try db.exec("PRAGMA cache_size = -32768;")
        // The committing connection starts the WAL over (``checkpoint()``); a WAL that grew past
        // twice the restart size during a burst is cut back to that when it does. (An older
        // store keeps its 4 KiB pages: frames are pages.)
        if !autoCheckpoint {
            let pageSize = try db.scalarInt("PRAGMA page_size")
            try db.exec("PRAGMA wal_autocheckpoint=0; PRAGMA journal_size_limit=\(2 * walRestartFrames * pageSize);")
        }
        var version = Int(try db.scalarInt("PRAGMA user_version"))
        guard version <= StateStore.schemaVersion else {
            throw SQLiteError(code: -1, message: "\(path) has schema \(version), newer than this build's \(StateStore.schemaVersion)")
        }
        while version < StateStore.schemaVersion {
            try db.exec("BEGIN IMMEDIATE; " + StateStore.migrations[version] + " PRAGMA user_version = \(version + 1); COMMIT;")
            version += 1
        }
    }

    /// The WAL size, in frames (a page each), from which ``checkpoint()`` makes the next commit
    /// start the WAL over (default 4 096: 32 MiB with a new store's 8 KiB pages).
    let walRestartFrames: Int64

    /// Copies committed WAL frames into the database file from a second connection, and keeps
    /// the WAL from growing without bound.
    ///
    /// A PASSIVE checkpoint neither waits for nor blocks commits; it copies the frames committed
    /// when it began and syncs the WAL and the database file. SQLite starts the WAL over only when
    /// a write transaction begins with every frame copied, which under continuous commits never
    /// happens (frames committed during the copy are always left): the WAL grew to 254 MB for a
    /// 16 MB database in a 5-second backfill and to 150 MB in 3 seconds of alerts, every commit
    /// appended to new blocks of the file, and those appends waited for the file system's block
    /// allocation while the checkpoint's sync wrote the file back (docs/benchmarks.md).
    ///
    /// So once the WAL holds ``walRestartFrames``, passes are repeated without holding commits
    /// until one finds fewer than 64 new frames (each copies what the pass before left; at most
    /// three), and then a last pass runs with commits held (``lock``): what came in during the
    /// pass before and the two syncs (2 – 4 ms measured in an alert storm; more when commits come
    /// faster than the passes catch up, once every 32 MiB). After it the WAL is fully copied and
    /// the next commit writes it again from its start, in blocks the file already has. (Giving up
    /// instead when three passes do not catch up left the WAL unbounded again under a fast
    /// enough stream of commits: 63 MB in StateStoreTests.) A reader in the middle of a read can
    /// still make SQLite keep appending; a later call tries again.
    package func checkpoint() throws(SQLiteError) {
        try checkpointLock.withLock { (_) throws(SQLiteError) in
            if checkpointer == nil { checkpointer = try SQLiteDatabase(path: path) }
            var pass = try checkpointer!.walCheckpoint()
            guard pass.frames >= walRestartFrames else { return }
            for _ in 0..<3 {
                let before = pass.frames
                pass = try checkpointer!.walCheckpoint()
                if pass.frames - before < 64 { break }
            }
            try lock.withLock { (_) throws(SQLiteError) in _ = try checkpointer!.walCheckpoint() }
        }
    }

    /// From this many users, ``load(alertNames:)`` reads in two halves in parallel.
    package var parallelLoadThreshold = 2000

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

    /// Runs `body` on the reader connection, in one read transaction: every statement of `body`
    /// sees the same commit (a weekly digest's series and alert rows, read while the user's shard
    /// commits newer rows).
    func reading(_ body: (HistoryReader) throws -> Void) throws {
        try readerLock.withLock { _ in
            if reader == nil { reader = try HistoryReader(path: path) }
            try reader!.begin()
            defer { reader!.finish() }
            try body(reader!)
        }
    }

    /// Runs `body` on the writing connection, in a transaction of its own.
    func lockedWrite<T>(_ body: (SQLiteDatabase) throws -> T) throws -> T {
        try lock.withLock { _ in
            try db.exec("BEGIN IMMEDIATE")
            do {
                let r = try body(db)
                try db.exec("COMMIT")
                return r
            } catch {
                try? db.exec("ROLLBACK")
                throw error
            }
        }
    }

    /// The FNV-1a hash of a user id, which logs and errors name users by (never by their id).
    package static func fingerprint(_ user: String) -> String {
        String(FNV1a64.hash(user), radix: 16)
    }

    /// Commits users, new outbox items and history rows in one transaction; returns the outbox ids in order.
    package func commit(users: [UserRecord], outbox: [OutboxItem], acknowledged: [Int64] = [], history: [HistoryRecord] = []) throws(SQLiteError) -> [Int64] {
        var announced: [OutboxItem] = []
        return try commit(users: users, outbox: outbox, acknowledged: acknowledged, history: history, prune: [], audited: [], announced: &announced)
    }

    /// ``commit(users:outbox:acknowledged:history:)`` with care-staff changes: each one's audit
    /// row is appended (numbered) and the outputs it announces inserted after `outbox`, in the same
    /// transaction; returns `outbox`'s ids in order and the announcing items with theirs.
    package func commit(
        users: [UserRecord], outbox: [OutboxItem], acknowledged: [Int64], history: [HistoryRecord], audited: [AuditedChange]
    ) throws(SQLiteError) -> (ids: [Int64], announced: [OutboxItem]) {
        var announced: [OutboxItem] = []
        let ids = try commit(users: users, outbox: outbox, acknowledged: acknowledged, history: history, prune: [], audited: audited, announced: &announced)
        return (ids, announced)
    }

    /// Commits weekly reports (their rows, replacing the due markers, and their outputs) and
    /// prunes those users' history (``pruneHistory(_:)``) in one transaction; returns the outbox ids in order.
    package func commitReports(outbox: [OutboxItem], history: [HistoryRecord], prune: [HistoryPrune]) throws(SQLiteError) -> [Int64] {
        var announced: [OutboxItem] = []
        return try commit(users: [], outbox: outbox, acknowledged: [], history: history, prune: prune, audited: [], announced: &announced)
    }

    private func commit(
        users: [UserRecord], outbox: [OutboxItem], acknowledged: [Int64], history: [HistoryRecord], prune: [HistoryPrune],
        audited: [AuditedChange], announced: inout [OutboxItem]
    ) throws(SQLiteError) -> [Int64] {
        try lock.withLock { _ throws(SQLiteError) in
            try statement(.begin).run()
            do {
                // A user's rows are updated in place, and inserted only when there were none: an
                // upsert of a row that exists first builds and tries the insert.
                let update = try statement(.updateUser)
                for u in users {
                    let head = u.state.map(UserRows.head)
                    let claims = u.eventClaims.isEmpty ? nil : StateStore.encodeClaims(u.eventClaims)
                    func bind(_ up: SQLiteDatabase.Statement) {
                        up.bind(1, u.user)
                        up.bind(2, Int64(u.appliedSeq))
                        if let e = u.eventNow { up.bind(3, e.milliseconds) }
                        if let head { up.bind(4, head) }
                        if let claims { up.bind(5, claims) }
                    }
                    bind(update)
                    try update.run()
                    if db.changes == 0 {
                        let insert = try statement(.insertUser)
                        bind(insert)
                        try insert.run()
                    }
                    guard let s = u.state else { continue }
                    // Only the open days that changed; rows of days folded since the last commit go.
                    if let before = s.foldedBefore {
                        let del = try statement(.deleteFoldedDays)
                        del.bind(1, u.user)
                        del.bind(2, Int64(before))
                        try del.run()
                    }
                    try UserRows.forEachChange(
                        of: s,
                        write: { (day, c, bytes, stored) throws(SQLiteError) in
                            // A chunk the store holds is updated; a new one (or one the update
                            // did not find) is upserted. Both take (user, day, chunk, bytes).
                            func write(_ sql: CommitSQL) throws(SQLiteError) {
                                let row = try statement(sql)
                                row.bind(1, u.user)
                                row.bind(2, Int64(day))
                                row.bind(3, Int64(c))
                                row.bind(4, bytes)
                                try row.run()
                            }
                            if stored {
                                try write(.updateChunk)
                                if db.changes == 1 { return }
                            }
                            try write(.upsertChunk)
                        },
                        deleteFrom: { (day, c) throws(SQLiteError) in
                            let del = try statement(.deleteChunksFrom)
                            del.bind(1, u.user)
                            del.bind(2, Int64(day))
                            del.bind(3, Int64(c))
                            try del.run()
                        })
                }
                var ids: [Int64] = []
                ids.reserveCapacity(outbox.count)
                try insert(outbox, ids: &ids)
                if !history.isEmpty {
                    try write(
                        history: history, upsert: try statement(.upsertHistory), replacing: try statement(.deleteTimelineRow),
                        insertDay: try statement(.insertHistoryDay), readDay: try statement(.readHistoryDay), writeDay: try statement(.writeHistoryDay))
                }
                if !acknowledged.isEmpty {
                    // Acknowledged ids come in runs (the outbox hands out ids in order): one
                    // statement a run instead of one an id.
                    let del = try statement(.deleteOutboxRun)
                    for run in StateStore.runs(acknowledged) {
                        del.bind(1, run.lowerBound)
                        del.bind(2, run.upperBound)
                        try del.run()
                    }
                }
                if !prune.isEmpty {
                    _ = try StateStore.prune(prune, rows: try statement(.pruneHistoryRows), days: try statement(.pruneHistoryDays), changes: { db.changes })
                }
                for change in audited {
                    var entry = change.entry
                    entry.seq = try append(audit: entry)
                    let items = change.announce(entry)
                    var itemIDs: [Int64] = []
                    try insert(items, ids: &itemIDs)
                    for (k, var item) in items.enumerated() {
                        item.id = itemIDs[k]
                        announced.append(item)
                    }
                }
                try statement(.commit).run()
                return ids
            } catch let e as SQLiteError {
                try? db.exec("ROLLBACK")
                for s in statements { s?.reset() }
                seriesIDs.withLock { $0.ids.removeAll() }  // ids created in the rolled-back transaction are gone
                throw e
            } catch {
                try? db.exec("ROLLBACK")
                for s in statements { s?.reset() }
                seriesIDs.withLock { $0.ids.removeAll() }  // ids created in the rolled-back transaction are gone
                throw SQLiteError(code: -1, message: "\(error)")
            }
        }
    }

    /// Inserts outbox items in multi-row `INSERT`s of ``CommitSQL/outboxRows`` rows, then fewer:
    /// `AUTOINCREMENT` reads and writes `sqlite_sequence` once a statement, and a statement's
    /// set-up is paid once for its rows. Appends their ids in order: one statement's rows get
    /// consecutive ids (one writer, each row's id one past the largest ever handed out), the last
    /// of them `sqlite3_last_insert_rowid`.
    private func insert(_ outbox: [OutboxItem], ids: inout [Int64]) throws(SQLiteError) {
        var k = 0
        while k < outbox.count {
            let sql = CommitSQL.insertOutbox(rows: outbox.count - k)
            let n = sql.rows
            let ins = try statement(sql)
            for r in 0..<n {
                let o = outbox[k + r], p = Int32(3 * r)
                ins.bind(p + 1, o.topic)
                ins.bind(p + 2, o.payload)
                ins.bind(p + 3, o.retain ? 1 : 0)
            }
            try ins.run()
            guard db.changes == Int32(n) else { throw SQLiteError(code: -1, message: "outbox: \(db.changes) of \(n) rows inserted") }
            let last = db.lastInsertRowID
            for r in 0..<Int64(n) { ids.append(last - Int64(n) + 1 + r) }
            k += n
        }
    }

    /// The ids as the fewest closed ranges of consecutive ids (sorted; duplicates merged): each
    /// range holds only ids of `ids`.
    package static func runs(_ ids: [Int64]) -> [ClosedRange<Int64>] {
        var runs: [ClosedRange<Int64>] = []
        for id in ids.sorted() {
            if let last = runs.last, id <= last.upperBound &+ 1 {
                if id > last.upperBound { runs[runs.count - 1] = last.lowerBound...id }
            } else {
                runs.append(id...id)
            }
        }
        return runs
    }

    /// A commit-path statement, prepared once (call only while holding `lock`).
    private func statement(_ sql: CommitSQL) throws(SQLiteError) -> SQLiteDatabase.Statement {
        if let s = statements[sql.rawValue] { return s }
        let s = try db.prepare(sql.text)
        statements[sql.rawValue] = s
        return s
    }

    /// Removes acknowledged outbox items.
    package func acknowledge(_ ids: [Int64]) throws(SQLiteError) {
        guard !ids.isEmpty else { return }
        _ = try commit(users: [], outbox: [], acknowledged: ids)
    }

    /// Reads a metadata value.
    package func meta(_ key: String) throws -> String? {
        try lock.withLock { _ in
            let q = try db.prepare("SELECT value FROM meta WHERE key = ?1")
            q.bind(1, key)
            return try q.step() ? q.text(0) : nil
        }
    }

    /// Writes a metadata value.
    package func setMeta(_ key: String, _ value: String) throws {
        try lock.withLock { _ in
            let q = try db.prepare("INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = ?2")
            q.bind(1, key)
            q.bind(2, value)
            try q.run()
        }
    }

    /// At most this many dead letters are kept; parking more drops the oldest.
    package static let maxDeadLetters = 10_000

    /// Moves outbox items the broker refused for good into `dead_letters` (with the reason and
    /// `at`, milliseconds since the epoch), so they are neither retried nor re-published after a
    /// restart; keeps the newest ``maxDeadLetters``. Returns how many dead letters there are now.
    @discardableResult
    package func park(_ items: [(id: Int64, reason: String)], at: Int64) throws(SQLiteError) -> Int {
        try lock.withLock { (_) throws(SQLiteError) -> Int in
            try db.exec("BEGIN IMMEDIATE")
            do throws(SQLiteError) {
                let move = try db.prepare(
                    "INSERT OR IGNORE INTO dead_letters (id, topic, payload, retain, reason, at) SELECT id, topic, payload, retain, ?2, ?3 FROM outbox WHERE id = ?1"
                )
                let del = try db.prepare("DELETE FROM outbox WHERE id = ?1")
                for item in items {
                    move.bind(1, item.id); move.bind(2, item.reason); move.bind(3, at)
                    try move.run()
                    del.bind(1, item.id)
                    try del.run()
                }
                try db.exec("DELETE FROM dead_letters WHERE id NOT IN (SELECT id FROM dead_letters ORDER BY id DESC LIMIT \(StateStore.maxDeadLetters))")
                let n = Int(try db.scalarInt("SELECT count(*) FROM dead_letters"))
                try db.exec("COMMIT")
                return n
            } catch {
                try? db.exec("ROLLBACK")
                throw error
            }
        }
    }

    /// One parked output.
    package struct DeadLetter: Sendable, Equatable {
        /// The outbox id the output had.
        package var id: Int64
        /// The MQTT topic.
        package var topic: String
        /// Why the broker or libmosquitto refused it.
        package var reason: String
        /// When it was parked, milliseconds since the epoch.
        package var at: Int64

        /// Creates a dead letter as read back.
        package init(id: Int64, topic: String, reason: String, at: Int64) {
            self.id = id
            self.topic = topic
            self.reason = reason
            self.at = at
        }
    }

    /// The parked outputs, oldest first (topics and reasons only: payloads hold health data).
    package func deadLetters() throws -> [DeadLetter] {
        try lock.withLock { _ in
            let q = try db.prepare("SELECT id, topic, reason, at FROM dead_letters ORDER BY id")
            var out: [DeadLetter] = []
            while try q.step() { out.append(DeadLetter(id: q.int(0), topic: q.text(1), reason: q.text(2), at: q.int(3))) }
            return out
        }
    }

    /// The number of pending outbox items.
    package func outboxCount() throws -> Int { try lock.withLock { _ in Int(try db.scalarInt("SELECT count(*) FROM outbox")) } }
}

extension SQLiteDatabase {
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
}

func sqlite3ColumnIsNull(_ s: SQLiteDatabase.Statement, _ c: Int32) -> Bool { sqlite3_column_type(s.s, c) == SQLITE_NULL }

/// The statements of a commit, named so that finding one costs an array index, not hashing its SQL.
private enum CommitSQL: Int, CaseIterable {
    case begin, updateUser, insertUser, deleteFoldedDays, updateChunk, upsertChunk, deleteChunksFrom, insertOutbox, insertOutbox4, insertOutbox16,
        insertOutbox64, deleteOutboxRun,
        upsertHistory, deleteTimelineRow, readHistoryDay, insertHistoryDay, writeHistoryDay, pruneHistoryRows, pruneHistoryDays, commit

    /// The largest outbox insert (rows a statement).
    static let outboxRows = 64

    /// The largest outbox insert of at most `rows` rows.
    static func insertOutbox(rows: Int) -> CommitSQL {
        rows >= outboxRows ? .insertOutbox64 : rows >= 16 ? .insertOutbox16 : rows >= 4 ? .insertOutbox4 : .insertOutbox
    }

    /// Rows an outbox insert writes (1 for the other statements).
    var rows: Int {
        switch self {
        case .insertOutbox64: 64
        case .insertOutbox16: 16
        case .insertOutbox4: 4
        default: 1
        }
    }

    var text: String {
        switch self {
        case .begin: "BEGIN IMMEDIATE"
        case .updateUser: "UPDATE users SET applied_seq = ?2, event_now = ?3, state = ?4, event_claims = ?5 WHERE user = ?1"
        case .insertUser: "INSERT INTO users (user, applied_seq, event_now, state, event_claims) VALUES (?1, ?2, ?3, ?4, ?5)"
        case .updateChunk: "UPDATE user_days SET data = ?4 WHERE user = ?1 AND day = ?2 AND chunk = ?3"
        case .deleteFoldedDays: "DELETE FROM user_days WHERE user = ?1 AND day < ?2"
        case .upsertChunk: "INSERT INTO user_days (user, day, chunk, data) VALUES (?1, ?2, ?3, ?4) ON CONFLICT(user, day, chunk) DO UPDATE SET data = ?4"
        case .deleteChunksFrom: "DELETE FROM user_days WHERE user = ?1 AND day = ?2 AND chunk >= ?3"
        case .insertOutbox, .insertOutbox4, .insertOutbox16, .insertOutbox64:
            "INSERT INTO outbox (topic, payload, retain) VALUES "
                + (0..<rows).map { r in "(?\(3 * r + 1), ?\(3 * r + 2), ?\(3 * r + 3))" }.joined(separator: ", ")
        case .deleteOutboxRun: "DELETE FROM outbox WHERE id >= ?1 AND id <= ?2"
        case .readHistoryDay: "SELECT data FROM history_days WHERE user = ?1 AND day = ?2"
        case .insertHistoryDay: "INSERT INTO history_days (user, day, data) VALUES (?1, ?2, ?3) ON CONFLICT(user, day) DO NOTHING"
        case .writeHistoryDay: "INSERT INTO history_days (user, day, data) VALUES (?1, ?2, ?3) ON CONFLICT(user, day) DO UPDATE SET data = ?3"
        case .deleteTimelineRow: "DELETE FROM history WHERE user = ?1 AND kind = 2 AND key = ?2"
        case .upsertHistory:
            "INSERT INTO history (user, kind, key, day, value, payload) VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(user, kind, key, day) DO UPDATE SET value = ?5, payload = ?6"
        case .pruneHistoryRows: StateStore.pruneRowsSQL
        case .pruneHistoryDays: StateStore.pruneDaysSQL
        case .commit: "COMMIT"
        }
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

extension StateStore {
    static func encodeClaims(_ claims: [Int64]) -> [UInt8] {
        var b: [UInt8] = []
        b.reserveCapacity(claims.count * 8)
        for c in claims { withUnsafeBytes(of: c.littleEndian) { b.append(contentsOf: $0) } }
        return b
    }

    static func decodeClaims(_ b: [UInt8]) -> [Int64] {
        guard b.count >= 8 else { return [] }
        return stride(from: 0, to: b.count - 7, by: 8).map { i in
            Int64(littleEndian: b.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: i, as: Int64.self) })
        }
    }
}

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
