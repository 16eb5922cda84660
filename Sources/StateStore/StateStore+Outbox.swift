import CSQLite
import Foundation
import MobilityModel
import Synchronization

import struct RuleEngine.StoredValue
import struct RuleEngine.UserSnapshot

extension StateStore {
    /// Removes acknowledged outbox items.
    package func acknowledge(_ ids: [Int64]) throws(SQLiteError) {
        guard !ids.isEmpty else { return }
        _ = try commit(users: [], outbox: [], acknowledged: ids)
    }
}

extension StateStore {
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
