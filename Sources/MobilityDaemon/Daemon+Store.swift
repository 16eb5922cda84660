import Foundation
import PostgresStore
import StateStore

extension Daemon {
    /// Opens the configured state store. PostgreSQL: this instance takes the partitions over
    /// (their fencing tokens go up), so a previous owner still running can no longer commit.
    func openStore() throws -> any StateBackend {
        switch config.store {
        case .sqlite:
            return try StateStore(path: config.state + "/state.sqlite", autoCheckpoint: false)
        case .postgres(let url):
            let host = ProcessInfo.processInfo.hostName
            let owner = "\(config.instance)@\(host) pid \(getpid())"
            let store =
                try claimed.map { try PostgresStore(url: url, owner: owner, partitions: $0.partitions, claimed: $0.tokens) }
                ?? PostgresStore(url: url, owner: owner)
            log.info(
                "state store is PostgreSQL",
                [
                    "store": store.location, "partitions": "\(store.partitions.owned.count)/\(store.partitions.count)",
                    "tokens": store.tokens.map(String.init).joined(separator: ",")
                ])
            return store
        }
    }
}
