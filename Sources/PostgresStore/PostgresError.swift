/// A failure of the PostgreSQL state backend: what kind, PostgreSQL's message and SQLSTATE, and
/// where in this code it was raised.
public struct PostgresError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure.
    public enum Code: Hashable, Sendable {
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
    public var code: Code
    /// What happened (PostgreSQL's message where it gave one; never a password, never health data).
    public var message: String
    /// The SQLSTATE of a failed statement (`23505`, `MWF01` for fencing), if any.
    public var sqlState: String?
    /// The source file that raised it.
    public var file: String
    /// The line that raised it.
    public var line: Int

    /// `postgres error (kind): message`.
    public var description: String { "postgres error (\(code)\(sqlState.map { " " + $0 } ?? "")): \(message)" }

    /// The SQLSTATE `mw_fence` raises when a partition's token is no longer the committer's.
    public static let fencedSQLState = "MWF01"

    /// A refused URL or environment.
    public static func configuration(_ message: String, file: String = #fileID, line: Int = #line) -> PostgresError {
        PostgresError(code: .configuration, message: message, sqlState: nil, file: file, line: line)
    }

    /// A connection failure.
    public static func connection(_ message: String, file: String = #fileID, line: Int = #line) -> PostgresError {
        PostgresError(code: .connection, message: message, sqlState: nil, file: file, line: line)
    }

    /// A failed statement (fencing when its SQLSTATE is ``fencedSQLState``).
    public static func statement(_ message: String, sqlState: String?, file: String = #fileID, line: Int = #line) -> PostgresError {
        PostgresError(code: sqlState == fencedSQLState ? .fenced : .statement, message: message, sqlState: sqlState, file: file, line: line)
    }

    /// A schema this build cannot use.
    public static func schema(_ message: String, file: String = #fileID, line: Int = #line) -> PostgresError {
        PostgresError(code: .schema, message: message, sqlState: nil, file: file, line: line)
    }
}
