import CSQLite
import MobilityModel

/// The reader connection of the history (reports, the HTTP API), with its statements prepared
/// once and the series names it has seen; used only under the store's reader lock.
final class HistoryReader {
    private let db: SQLiteDatabase
    private var statements: [String: SQLiteDatabase.Statement] = [:]
    private var names: [Int64: (name: String, unit: String)] = [:]
    private var transaction: (begin: SQLiteDatabase.Statement, commit: SQLiteDatabase.Statement)?

    /// Opens a connection that maps the database file (no copy of each page read) with a cache of
    /// its own: a weekly close reads every user's recent days.
    init(path: String, readOnly: Bool = false) throws(SQLiteError) {
        db = try SQLiteDatabase(path: path, readOnly: readOnly)
        try db.exec("PRAGMA mmap_size = 1073741824; PRAGMA cache_size = -65536;")
    }

    /// A statement of `sql`, prepared on first use, reset and unbound.
    func prepare(_ sql: String) throws(SQLiteError) -> SQLiteDatabase.Statement {
        if let s = statements[sql] {
            s.reset()
            return s
        }
        let s = try db.prepare(sql)
        statements[sql] = s
        return s
    }

    /// Starts a read transaction: the statements until ``finish()`` see one snapshot.
    func begin() throws(SQLiteError) {
        if transaction == nil { transaction = (try db.prepare("BEGIN"), try db.prepare("COMMIT")) }
        if sqlite3_get_autocommit(db.handle) == 0 { try? db.exec("ROLLBACK") }  // left open by a COMMIT that failed
        try transaction!.begin.run()
    }

    /// Resets every statement and ends the read transaction: the next read sees the latest
    /// commit (a statement left stepped, or the transaction left open, would pin an old snapshot and the WAL).
    func finish() {
        for s in statements.values { s.reset() }
        if let t = transaction { _ = try? t.commit.run() }
    }

    /// The name and unit of a series id (re-read when a new series appeared since).
    func series(_ id: Int64) throws(SQLiteError) -> (name: String, unit: String)? {
        if let s = names[id] { return s }
        let n = try prepare("SELECT id, name, unit FROM history_series")
        while try n.step() { names[n.int(0)] = (n.text(1), n.text(2)) }
        n.reset()
        return names[id]
    }
}
