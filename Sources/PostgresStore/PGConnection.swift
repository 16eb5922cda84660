import CLibPQ

/// One libpq connection: simple statements, prepared statements with binary parameters and
/// results, pipelines (many statements, one round trip) and streamed rows. One thread at a time.
///
/// A lost connection is re-established by the next call (`PQreset`); its statements are
/// prepared again on first use.
final class PGConnection {
    private let conn: OpaquePointer
    /// SQL text → prepared statement name, on this session.
    private var prepared: [String: String] = [:]
    /// The session's `application_name` (set again after a reconnection), or nil for libpq's.
    private let applicationName: String?
    /// What it connects with (never a password: ``PostgresURL`` refuses one in the URL).
    private let conninfo: String

    /// Connects (`conninfo`: a `postgres://` URL or `key=value` pairs, checked by ``PostgresURL``);
    /// `applicationName` names the session in `pg_stat_activity` (an instance's owner name: what
    /// lets another instance end a session of an owner whose lease expired, ``PartitionLeases``).
    init(conninfo: String, applicationName: String? = nil) throws(PostgresError) {
        // Tried again once when the server answers after the first try failed: it may have
        // finished starting in between; failing again, the server refused this session.
        var made: OpaquePointer?
        for attempt in 1...2 {
            guard let c = PQconnectdb(conninfo) else { throw .connection("libpq could not allocate a connection") }
            if PQstatus(c) == CONNECTION_OK {
                made = c
                break
            }
            let m = PGConnection.message(PQerrorMessage(c))
            PQfinish(c)
            let answered = PGConnection.answers(conninfo)
            if attempt == 2 || !answered { throw .connection(m, serverAnswered: answered) }
        }
        guard let c = made else { throw .connection("libpq could not connect") }
        conn = c
        self.conninfo = conninfo
        self.applicationName = applicationName
        try PGConnection.configure(c, applicationName: applicationName)
    }

    /// UTF-8 text, libpq's notices (`relation … already exists, skipping`) not printed on stderr,
    /// which is the daemon's log, and the session's application name.
    private static func configure(_ c: OpaquePointer, applicationName: String?) throws(PostgresError) {
        PQsetClientEncoding(c, "UTF8")
        PQsetNoticeProcessor(c, { _, _ in }, nil)
        guard let applicationName else { return }
        let r = applicationName.withCString { v in
            var values: [UnsafePointer<CChar>?] = [v]
            return values.withUnsafeMutableBufferPointer {
                PQexecParams(c, "SELECT set_config('application_name', $1, false)", 1, nil, $0.baseAddress, nil, nil, 0)
            }
        }
        defer { PQclear(r) }
        guard PQresultStatus(r) == PGRES_TUPLES_OK else {
            // A lost connection is an outage; a refused statement carries its SQLSTATE (the server answered).
            var e = failure(of: r, on: c)
            e.message = "cannot name the session: " + e.message
            throw e
        }
    }

    deinit { PQfinish(conn) }

    /// Whether the server at `conninfo` answers and accepts connections (`PQping`), whoever asks:
    /// after a failed connection, that the server refused this one (credentials, database,
    /// `pg_hba.conf`) rather than being down, starting or shutting down.
    static func answers(_ conninfo: String) -> Bool { PQping(conninfo) == PQPING_OK }

    static func message(_ p: UnsafePointer<CChar>?) -> String {
        guard let p else { return "unknown error" }
        return String(cString: p).trimmingCharacters(in: "\n ")
    }

    /// The host (or socket directory) libpq connected to.
    var host: String { PQhost(conn).map { String(cString: $0) } ?? "" }
    /// Whether the session is encrypted.
    var usesTLS: Bool { PQsslInUse(conn) == 1 }

    /// Reconnects if the connection was lost.
    private func ensureConnected() throws(PostgresError) {
        guard PQstatus(conn) != CONNECTION_OK else { return }
        prepared.removeAll()
        PQreset(conn)
        guard PQstatus(conn) == CONNECTION_OK else {
            throw .connection(PGConnection.message(PQerrorMessage(conn)), serverAnswered: PGConnection.answers(conninfo))
        }
        try PGConnection.configure(conn, applicationName: applicationName)
    }

    /// What a failed result `res` of session `c` was: the connection lost, or the statement's error with its SQLSTATE.
    private static func failure(of res: OpaquePointer?, on c: OpaquePointer) -> PostgresError {
        if PQstatus(c) != CONNECTION_OK { return .connection(PGConnection.message(PQerrorMessage(c))) }
        guard let res else { return .connection(PGConnection.message(PQerrorMessage(c))) }
        let state = PQresultErrorField(res, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
        return .statement(PGConnection.message(PQresultErrorMessage(res)), sqlState: state)
    }

    private func failure(_ res: OpaquePointer?) -> PostgresError { PGConnection.failure(of: res, on: conn) }

    private func check(_ res: OpaquePointer?) throws(PostgresError) -> PGResult {
        let r = PGResult(res)
        switch res.map(PQresultStatus) {
        case PGRES_COMMAND_OK?, PGRES_TUPLES_OK?: return r
        default: throw failure(res)
        }
    }

    /// Runs SQL text (several statements allowed; no parameters, no results).
    func exec(_ sql: String) throws(PostgresError) {
        try ensureConnected()
        _ = try check(PQexec(conn, sql))
    }

    /// The name of `sql` prepared on this session (preparing it on first use).
    private func statement(_ sql: String) throws(PostgresError) -> String {
        if let name = prepared[sql] { return name }
        let name = "mw\(prepared.count)"
        _ = try check(PQprepare(conn, name, sql, 0, nil))
        prepared[sql] = name
        return name
    }

    /// Runs one prepared statement; its rows in binary format.
    @discardableResult
    func query(_ sql: String, _ parameters: PGParameters = PGParameters()) throws(PostgresError) -> PGResult {
        try ensureConnected()
        let name = try statement(sql)
        let res = parameters.withLibPQ { n, v, l, f in PQexecPrepared(conn, name, n, v, l, f, 1) }
        return try check(res)
    }

    /// Runs statements in one pipeline: sent together, one round trip, one implicit transaction
    /// (the statements up to the pipeline's sync). The first failure aborts the rest and rolls
    /// everything back; it is what is thrown. Returns each statement's result.
    func pipeline(_ steps: [(sql: String, parameters: PGParameters)]) throws(PostgresError) -> [PGResult] {
        try ensureConnected()
        let names = try steps.map { (s) throws(PostgresError) in try statement(s.sql) }
        guard PQenterPipelineMode(conn) == 1 else { throw .connection(PGConnection.message(PQerrorMessage(conn))) }
        var results: [PGResult] = []
        var error: PostgresError?
        var sent = 0
        for (k, s) in steps.enumerated() {
            let ok = s.parameters.withLibPQ { n, v, l, f in PQsendQueryPrepared(conn, names[k], n, v, l, f, 1) }
            guard ok == 1 else {
                error = .connection(PGConnection.message(PQerrorMessage(conn)))
                break
            }
            sent += 1
        }
        if PQpipelineSync(conn) != 1, error == nil { error = .connection(PGConnection.message(PQerrorMessage(conn))) }
        // Every statement's results (each list ends with NULL), then the sync's.
        for _ in 0..<sent {
            var last: PGResult?
            while let res = PQgetResult(conn) {
                let r = PGResult(res)
                switch PQresultStatus(res) {
                case PGRES_COMMAND_OK, PGRES_TUPLES_OK: last = r
                case PGRES_PIPELINE_ABORTED: break
                default: if error == nil { error = failure(res) }
                }
            }
            results.append(last ?? PGResult(nil))
            if PQstatus(conn) != CONNECTION_OK { break }
        }
        if PQstatus(conn) == CONNECTION_OK {
            while let res = PQgetResult(conn) {
                let status = PQresultStatus(res)
                PQclear(res)
                if status == PGRES_PIPELINE_SYNC { break }
            }
            PQexitPipelineMode(conn)
        }
        if PQstatus(conn) != CONNECTION_OK { throw .connection(PGConnection.message(PQerrorMessage(conn))) }
        if let error { throw error }
        return results
    }

    /// Runs a prepared statement and hands its rows to `row` one at a time, as they arrive
    /// (libpq's single-row mode: a large result is never held whole).
    func stream(_ sql: String, _ parameters: PGParameters = PGParameters(), row: (PGResult) throws -> Void) throws {
        try ensureConnected()
        let name = try statement(sql)
        let ok = parameters.withLibPQ { n, v, l, f in PQsendQueryPrepared(conn, name, n, v, l, f, 1) }
        guard ok == 1 else { throw PostgresError.connection(PGConnection.message(PQerrorMessage(conn))) }
        PQsetSingleRowMode(conn)
        var failed: (any Error)?
        while let res = PQgetResult(conn) {
            let r = PGResult(res)
            switch PQresultStatus(res) {
            case PGRES_SINGLE_TUPLE:
                guard failed == nil else { continue }  // read to the end, so the connection stays usable
                do { try row(r) } catch { failed = error }
            case PGRES_TUPLES_OK, PGRES_COMMAND_OK: break
            default: if failed == nil { failed = failure(res) }
            }
        }
        if let failed { throw failed }
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s.removeFirst() }
        while let l = s.last, set.contains(l) { s.removeLast() }
        return String(s)
    }
}
