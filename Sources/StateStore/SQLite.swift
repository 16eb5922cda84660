import CSQLite

/// An SQLite error with the library's message.
package struct SQLiteError: Error, CustomStringConvertible, Sendable {
    /// The SQLite result code (`SQLITE_*`).
    package let code: Int32
    /// SQLite's message (`sqlite3_errmsg`), prefixed by the path when opening failed.
    package let message: String
    /// `sqlite error CODE: message`.
    package var description: String { "sqlite error \(code): \(message)" }
}

/// A minimal SQLite connection: exec, prepared statements, transactions. One thread at a time.
final class SQLiteDatabase {
    let handle: OpaquePointer

    /// Opens `path`, creating it unless `readOnly` (then nothing is ever written to it: no schema
    /// change, no checkpoint).
    init(path: String, readOnly: Bool = false) throws(SQLiteError) {
        var db: OpaquePointer?
        let mode = readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        let rc = sqlite3_open_v2(path, &db, mode | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let db else {
            let msg = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let db { sqlite3_close(db) }
            throw SQLiteError(code: rc, message: "\(path): \(msg)")
        }
        handle = db
        sqlite3_busy_timeout(db, 5000)
    }

    deinit { sqlite3_close_v2(handle) }

    /// Rows changed by the last statement.
    var changes: Int32 { sqlite3_changes(handle) }

    func error(_ rc: Int32) -> SQLiteError { SQLiteError(code: rc, message: String(cString: sqlite3_errmsg(handle))) }

    func exec(_ sql: String) throws(SQLiteError) {
        var err: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &err)
        if rc != SQLITE_OK {
            let m = err.map { String(cString: $0) } ?? "error"
            sqlite3_free(err)
            throw SQLiteError(code: rc, message: m)
        }
    }

    func prepare(_ sql: String) throws(SQLiteError) -> Statement {
        var s: OpaquePointer?
        let rc = sqlite3_prepare_v2(handle, sql, -1, &s, nil)
        guard rc == SQLITE_OK, let s else { throw error(rc) }
        return Statement(s, db: self)
    }

    /// A PASSIVE checkpoint of the main database: copies the WAL frames it can into the database
    /// file without waiting for other connections. Returns the frames in the WAL and how many of
    /// them are now copied (equal: the next write transaction starts the WAL over).
    /// (The pragma, not `sqlite3_wal_checkpoint_v2`: on a connection that has read nothing yet
    /// the C call finds no WAL open and copies nothing.)
    func walCheckpoint() throws(SQLiteError) -> (frames: Int64, copied: Int64) {
        let s = try prepare("PRAGMA wal_checkpoint(PASSIVE)")
        guard try s.step() else { return (0, 0) }
        return (s.int(1), s.int(2))
    }

    func scalarInt(_ sql: String) throws(SQLiteError) -> Int64 {
        let s = try prepare(sql)
        guard try s.step() else { return 0 }
        return s.int(0)
    }

    /// A prepared statement.
    ///
    /// Bound text and blobs are copied into a buffer the statement keeps for that parameter
    /// (grown, never shrunk) and bound `SQLITE_STATIC`: SQLite reads them there until the
    /// parameter is bound again, cleared (``reset()``) or the statement finalized, instead of
    /// allocating, copying and freeing a copy of its own each bind (`SQLITE_TRANSIENT`).
    final class Statement {
        let s: OpaquePointer
        unowned let db: SQLiteDatabase
        /// Parameter `i`'s buffer at index `i - 1` (nil base: none yet).
        private var buffers: [UnsafeMutableRawBufferPointer] = []
        /// Buffers outgrown since the last ``reset()``, freed once no binding can point into them
        /// (a bind refused while the statement runs keeps the old value).
        private var retired: [UnsafeMutableRawBufferPointer] = []
        init(_ s: OpaquePointer, db: SQLiteDatabase) { self.s = s; self.db = db }
        deinit {
            sqlite3_finalize(s)  // before the buffers it may point into go
            for b in buffers { b.deallocate() }
            for b in retired { b.deallocate() }
        }

        func reset() {
            sqlite3_reset(s)
            sqlite3_clear_bindings(s)
            if !retired.isEmpty {
                for b in retired { b.deallocate() }
                retired.removeAll()
            }
        }
        func bind(_ i: Int32, _ v: Int64) { sqlite3_bind_int64(s, i, v) }
        /// Binds text up to its first NUL, as a C string of it reads (UTF-8).
        func bind(_ i: Int32, _ v: String) {
            var v = v
            v.withUTF8 { u in
                let n = u.firstIndex(of: 0) ?? u.count
                let p = buffer(i, n)
                if n > 0 { p.copyMemory(from: u.baseAddress!, byteCount: n) }
                _ = sqlite3_bind_text(s, i, p.assumingMemoryBound(to: CChar.self), Int32(n), nil)
            }
        }
        /// Binds a blob (an empty one is a zero-length blob, not NULL).
        func bind(_ i: Int32, _ v: [UInt8]) {
            v.withUnsafeBytes { b in
                let p = buffer(i, b.count)
                if let base = b.baseAddress, b.count > 0 { p.copyMemory(from: base, byteCount: b.count) }
                _ = sqlite3_bind_blob(s, i, p, Int32(b.count), nil)
            }
        }

        /// Parameter `i`'s buffer, with room for `count` bytes (never nil, so that an empty value is not NULL).
        private func buffer(_ i: Int32, _ count: Int) -> UnsafeMutableRawPointer {
            // SQLite refuses a bind to a statement that has not been reset, and would keep reading
            // the previous value from this buffer, which is about to be overwritten in place.
            precondition(sqlite3_stmt_busy(s) == 0, "a bind to an SQLite statement that has not been reset")
            let k = Int(i) - 1
            if k >= buffers.count {
                buffers.append(contentsOf: repeatElement(UnsafeMutableRawBufferPointer(start: nil, count: 0), count: k + 1 - buffers.count))
            }
            if buffers[k].baseAddress == nil || buffers[k].count < count {
                if buffers[k].baseAddress != nil { retired.append(buffers[k]) }  // the current binding may point here
                buffers[k] = .allocate(byteCount: max(64, count + count / 2), alignment: 8)
            }
            return buffers[k].baseAddress!
        }
        func bind(_ i: Int32, double v: Double) { sqlite3_bind_double(s, i, v) }

        /// Steps; true when a row is available.
        func step() throws(SQLiteError) -> Bool {
            let rc = sqlite3_step(s)
            if rc == SQLITE_ROW { return true }
            if rc == SQLITE_DONE { return false }
            throw db.error(rc)
        }

        func run() throws(SQLiteError) { _ = try step(); reset() }
        func int(_ c: Int32) -> Int64 { sqlite3_column_int64(s, c) }
        func double(_ c: Int32) -> Double { sqlite3_column_double(s, c) }
        func isNull(_ c: Int32) -> Bool { sqlite3_column_type(s, c) == SQLITE_NULL }
        func text(_ c: Int32) -> String { sqlite3_column_text(s, c).map { String(cString: $0) } ?? "" }
        /// Calls `body` with a blob column's bytes, valid only during the call (no copy).
        func withBlob<R>(_ c: Int32, _ body: (UnsafeRawBufferPointer) -> R) -> R {
            let p = sqlite3_column_blob(s, c)
            let n = Int(sqlite3_column_bytes(s, c))
            return body(UnsafeRawBufferPointer(start: n > 0 ? p : nil, count: max(n, 0)))
        }
        func blob(_ c: Int32) -> [UInt8] {
            let n = Int(sqlite3_column_bytes(s, c))
            guard n > 0, let p = sqlite3_column_blob(s, c) else { return [] }
            return Array(UnsafeRawBufferPointer(start: p, count: n))
        }
    }
}
