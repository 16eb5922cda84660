import PostgresStore

/// Where state is (`--store`): the embedded SQLite store (the default, one machine), or a
/// PostgreSQL database that instances share (docs/scaling.md), fenced per partition. The ingest journal
/// stays in `--state` either way.
package enum StoreLocation: Sendable, Equatable {
    /// `state.sqlite` in the state directory.
    case sqlite
    /// A PostgreSQL URL (checked: no password in it, verified TLS off the loopback).
    case postgres(url: String)
}

extension DaemonConfiguration {
    static let storeOptions: [Option] = [
        Option(
            name: "store", value: "sqlite:DIR|postgres://…",
            help:
                "state store: SQLite in DIR (the same as --state DIR; the default: sqlite in --state), or a PostgreSQL database (no password in the URL: PGPASSFILE; TLS sslmode=verify-full off loopback; the journal stays in --state)"
        )
    ]

    mutating func applyStore(_ m: [String: String], environment: [String: String]) throws(Problem) {
        guard let v = m["store"] else { return }
        if v.hasPrefix("sqlite:") {
            let dir = String(v.dropFirst("sqlite:".count))
            guard !dir.isEmpty else { throw Problem(description: "--store sqlite:DIR needs a directory") }
            if let s = m["state"], s != dir { throw Problem(description: "--store sqlite:\(dir) and --state \(s) name two state directories; give one") }
            state = dir
            store = .sqlite
        } else if v.hasPrefix("postgres://") || v.hasPrefix("postgresql://") {
            do { _ = try PostgresURL.check(v, environment: environment) } catch { throw Problem(description: "--store: \(error.message)") }
            store = .postgres(url: v)
        } else {
            // Not echoed: a mistyped URL may hold a password.
            throw Problem(description: "--store must be sqlite:DIR or postgres://[USER@]HOST[:PORT]/DATABASE[?sslmode=verify-full]")
        }
    }
}
