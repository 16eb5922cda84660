import CSQLite

/// Rewrites a stored user state in place, as a damaged disk or a newer build could leave it, for
/// tests of strict decoding.
package enum StoredStateTampering {
    /// Replaces the alert-state tag stored after `rule`'s name in `user`'s state (2: firing) by
    /// `tag`, and returns the tag it replaced. Throws when the database or the name is not found.
    @discardableResult
    package static func setAlertStateTag(database path: String, user: String, rule: String, to tag: UInt8) throws -> UInt8 {
        var db: OpaquePointer?
        guard sqlite3_open(path, &db) == SQLITE_OK else { throw HarnessError("cannot open \(path)") }
        defer { sqlite3_close(db) }
        var q: OpaquePointer?
        guard sqlite3_prepare_v2(db, "SELECT state FROM users WHERE user = ?1", -1, &q, nil) == SQLITE_OK else { throw HarnessError("no users table") }
        _ = mw_sqlite_bind_text(q, 1, user)
        guard sqlite3_step(q) == SQLITE_ROW else { sqlite3_finalize(q); throw HarnessError("no state for \(user)") }
        var blob = Array(UnsafeRawBufferPointer(start: sqlite3_column_blob(q, 0), count: Int(sqlite3_column_bytes(q, 0))))
        sqlite3_finalize(q)
        let name = Array(rule.utf8)
        guard let start = blob.indices.first(where: { blob[$0...].starts(with: name) }), start + name.count < blob.count else {
            throw HarnessError("rule \(rule) not in the state of \(user)")
        }
        let at = start + name.count
        let old = blob[at]
        blob[at] = tag
        var u: OpaquePointer?
        guard sqlite3_prepare_v2(db, "UPDATE users SET state = ?1 WHERE user = ?2", -1, &u, nil) == SQLITE_OK else { throw HarnessError("cannot update") }
        defer { sqlite3_finalize(u) }
        _ = blob.withUnsafeBytes { mw_sqlite_bind_blob(u, 1, $0.baseAddress, Int32($0.count)) }
        _ = mw_sqlite_bind_text(u, 2, user)
        guard sqlite3_step(u) == SQLITE_DONE else { throw HarnessError("update failed") }
        return old
    }
}
