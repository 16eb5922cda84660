import StateStore

/// A failure of the PostgreSQL state backend: what kind, PostgreSQL's message and SQLSTATE, and
/// where in this code it was raised.
package struct PostgresError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure.
    package enum Code: Hashable, Sendable {
        /// The URL or environment is refused before connecting (a password in the URL, no TLS off loopback).
        case configuration
        /// The server cannot be reached, or the connection was lost.
        case connection
        /// A statement failed (PostgreSQL's SQLSTATE in ``PostgresError/sqlState``).
        case statement
        /// This instance no longer owns a partition it committed for: another took it over (a
        /// higher fencing token). Nothing of the transaction was written.
        case fenced
        /// The database holds a schema newer than this build's, or one it cannot read.
        case schema
    }

    /// What kind of failure.
    package var code: Code
    /// What happened (PostgreSQL's message where it gave one; never a password, never health data).
    package var message: String
    /// The SQLSTATE of a failed statement (`23505`, `MWF01` for fencing), if any.
    package var sqlState: String?
    /// The source file that raised it.
    package var file: String
    /// A ``Code/connection`` failure of a server that answers (its `PQping` is OK): the
    /// credentials, the database, `pg_hba.conf` or TLS refused — not an outage.
    package var serverAnswered = false
    /// The line that raised it.
    package var line: Int

    /// `postgres error (kind): message`.
    package var description: String { "postgres error (\(code)\(sqlState.map { " " + $0 } ?? "")): \(message)" }

    /// The SQLSTATE `mw_fence` raises when a partition's token is no longer the committer's.
    package static let fencedSQLState = "MWF01"

    /// A refused URL or environment.
    package static func configuration(_ message: String, file: String = #fileID, line: Int = #line) -> PostgresError {
        PostgresError(code: .configuration, message: message, sqlState: nil, file: file, line: line)
    }

    /// A connection failure; `serverAnswered` when the server answers but refused the session.
    package static func connection(_ message: String, serverAnswered: Bool = false, file: String = #fileID, line: Int = #line) -> PostgresError {
        var e = PostgresError(code: .connection, message: message, sqlState: nil, file: file, line: line)
        e.serverAnswered = serverAnswered
        return e
    }

    /// A failed statement (fencing when its SQLSTATE is ``fencedSQLState``).
    package static func statement(_ message: String, sqlState: String?, file: String = #fileID, line: Int = #line) -> PostgresError {
        PostgresError(code: sqlState == fencedSQLState ? .fenced : .statement, message: message, sqlState: sqlState, file: file, line: line)
    }

    /// A schema this build cannot use.
    package static func schema(_ message: String, file: String = #fileID, line: Int = #line) -> PostgresError {
        PostgresError(code: .schema, message: message, sqlState: nil, file: file, line: line)
    }
}

extension PostgresError: StateBackendError {
    /// Whether it is ``Code/fenced``.
    package var isFenced: Bool { code == .fenced }
    /// A connection that could not be made to a server that does not answer, or was lost; a
    /// connection exception (SQLSTATE class 08); or the server shutting down, crashed or still
    /// starting (57P01, 57P02, 57P03). Not a session the server refused (``serverAnswered``).
    package var isUnavailable: Bool {
        (code == .connection && !serverAnswered) || (sqlState.map { $0.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains($0) } ?? false)
    }
}
