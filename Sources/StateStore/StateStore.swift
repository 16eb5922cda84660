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
    package static let schemaVersion = 8
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
        StateStore.silencesMigration,
        // 7 → 8: the audit trail by user and action (a patient's acknowledgements).
        StateStore.auditByUserMigration
    ]

    let db: SQLiteDatabase
    let lock = Mutex<Void>(())
    /// Open days are stored as chunks of this many values, one `user_days` row each, so that a
    /// commit rewrites only the chunks from the first value that changed.
    package static let chunkSize = 64
    static func chunks(_ values: Int) -> Int { (values + chunkSize - 1) / chunkSize }
    /// The commit path's statements, prepared on first use (used only under `lock`).
    var statements = [SQLiteDatabase.Statement?](repeating: nil, count: CommitSQL.allCases.count)
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
    /// Whether the store was opened read-only (``init(path:autoCheckpoint:walRestartFrames:readOnly:)``).
    package let readOnly: Bool

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
    ///
    /// `readOnly`: for tools that read a store a running mobilityd may be writing (exports,
    /// reports): the file must exist and have this build's schema or an older one; the database
    /// is never migrated, re-moded or checkpointed, and every write fails. SQLite still creates
    /// the `-wal` and `-shm` files when they are absent (a WAL database's readers need them),
    /// with the database file's mode (0600).
    package init(path: String, autoCheckpoint: Bool = true, walRestartFrames: Int64 = 4096, readOnly: Bool = false) throws(SQLiteError) {
        self.path = path
        self.walRestartFrames = walRestartFrames
        self.readOnly = readOnly
        if readOnly {
            db = try SQLiteDatabase(path: path, readOnly: true)
            let version = Int(try db.scalarInt("PRAGMA user_version"))
            guard version <= StateStore.schemaVersion else {
                throw SQLiteError(code: -1, message: "\(path) has schema \(version), newer than this build's \(StateStore.schemaVersion)")
            }
            return
        }
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
        // (docs/benchmarks-history.md): its reads 7 990 → 0, its WAL writes 12 778 → 6 528 in 3 s.
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
    /// allocation while the checkpoint's sync wrote the file back (docs/benchmarks-history.md).
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
        guard !readOnly else { return }
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

    /// Runs `body` on the reader connection, in one read transaction: every statement of `body`
    /// sees the same commit (a weekly digest's series and alert rows, read while the user's shard
    /// commits newer rows).
    func reading(_ body: (HistoryReader) throws -> Void) throws {
        try readerLock.withLock { _ in
            if reader == nil { reader = try HistoryReader(path: path, readOnly: readOnly) }
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
}

extension SQLiteDatabase {
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
}

func sqlite3ColumnIsNull(_ s: SQLiteDatabase.Statement, _ c: Int32) -> Bool { sqlite3_column_type(s.s, c) == SQLITE_NULL }

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
