import CSQLite
import Foundation
import MobilityModel
import Synchronization

import struct RuleEngine.StoredValue
import struct RuleEngine.UserSnapshot

extension StateStore {
    /// Commits users, new outbox items and history rows in one transaction; returns the outbox ids in order.
    package func commit(users: [UserRecord], outbox: [OutboxItem], acknowledged: [Int64] = [], history: [HistoryRecord] = []) throws(SQLiteError) -> [Int64] {
        var announced: [OutboxItem] = []
        return try commit(users: users, outbox: outbox, acknowledged: acknowledged, history: history, prune: [], audited: [], announced: &announced)
    }

    /// ``commit(users:outbox:acknowledged:history:)`` with care-staff changes: each one's audit
    /// row is appended (numbered) and the outputs it announces inserted after `outbox`, in the same
    /// transaction; returns `outbox`'s ids in order and the announcing items with theirs.
    package func commit(
        users: [UserRecord], outbox: [OutboxItem], acknowledged: [Int64], history: [HistoryRecord], audited: [AuditedChange]
    ) throws(SQLiteError) -> (ids: [Int64], announced: [OutboxItem]) {
        var announced: [OutboxItem] = []
        let ids = try commit(users: users, outbox: outbox, acknowledged: acknowledged, history: history, prune: [], audited: audited, announced: &announced)
        return (ids, announced)
    }

    /// Commits weekly reports (their rows, replacing the due markers, and their outputs) and
    /// prunes those users' history (``pruneHistory(_:)``) in one transaction; returns the outbox ids in order.
    package func commitReports(outbox: [OutboxItem], history: [HistoryRecord], prune: [HistoryPrune]) throws(SQLiteError) -> [Int64] {
        var announced: [OutboxItem] = []
        return try commit(users: [], outbox: outbox, acknowledged: [], history: history, prune: prune, audited: [], announced: &announced)
    }

    private func commit(
        users: [UserRecord], outbox: [OutboxItem], acknowledged: [Int64], history: [HistoryRecord], prune: [HistoryPrune],
        audited: [AuditedChange], announced: inout [OutboxItem]
    ) throws(SQLiteError) -> [Int64] {
        try lock.withLock { _ throws(SQLiteError) in
            try statement(.begin).run()
            do {
                // A user's rows are updated in place, and inserted only when there were none: an
                // upsert of a row that exists first builds and tries the insert.
                let update = try statement(.updateUser)
                for u in users {
                    let head = u.state.map(UserRows.head)
                    let claims = u.eventClaims.isEmpty ? nil : StateStore.encodeClaims(u.eventClaims)
                    func bind(_ up: SQLiteDatabase.Statement) {
                        up.bind(1, u.user)
                        up.bind(2, Int64(u.appliedSeq))
                        if let e = u.eventNow { up.bind(3, e.milliseconds) }
                        if let head { up.bind(4, head) }
                        if let claims { up.bind(5, claims) }
                    }
                    bind(update)
                    try update.run()
                    if db.changes == 0 {
                        let insert = try statement(.insertUser)
                        bind(insert)
                        try insert.run()
                    }
                    guard let s = u.state else { continue }
                    // Only the open days that changed; rows of days folded since the last commit go.
                    if let before = s.foldedBefore {
                        let del = try statement(.deleteFoldedDays)
                        del.bind(1, u.user)
                        del.bind(2, Int64(before))
                        try del.run()
                    }
                    try UserRows.forEachChange(
                        of: s,
                        write: { (day, c, bytes, stored) throws(SQLiteError) in
                            // A chunk the store holds is updated; a new one (or one the update
                            // did not find) is upserted. Both take (user, day, chunk, bytes).
                            func write(_ sql: CommitSQL) throws(SQLiteError) {
                                let row = try statement(sql)
                                row.bind(1, u.user)
                                row.bind(2, Int64(day))
                                row.bind(3, Int64(c))
                                row.bind(4, bytes)
                                try row.run()
                            }
                            if stored {
                                try write(.updateChunk)
                                if db.changes == 1 { return }
                            }
                            try write(.upsertChunk)
                        },
                        deleteFrom: { (day, c) throws(SQLiteError) in
                            let del = try statement(.deleteChunksFrom)
                            del.bind(1, u.user)
                            del.bind(2, Int64(day))
                            del.bind(3, Int64(c))
                            try del.run()
                        })
                }
                var ids: [Int64] = []
                ids.reserveCapacity(outbox.count)
                try insert(outbox, ids: &ids)
                if !history.isEmpty {
                    try write(
                        history: history, upsert: try statement(.upsertHistory), replacing: try statement(.deleteTimelineRow),
                        insertDay: try statement(.insertHistoryDay), readDay: try statement(.readHistoryDay), writeDay: try statement(.writeHistoryDay))
                }
                if !acknowledged.isEmpty {
                    // Acknowledged ids come in runs (the outbox hands out ids in order): one
                    // statement a run instead of one an id.
                    let del = try statement(.deleteOutboxRun)
                    for run in StateStore.runs(acknowledged) {
                        del.bind(1, run.lowerBound)
                        del.bind(2, run.upperBound)
                        try del.run()
                    }
                }
                if !prune.isEmpty {
                    _ = try StateStore.prune(prune, rows: try statement(.pruneHistoryRows), days: try statement(.pruneHistoryDays), changes: { db.changes })
                }
                for change in audited {
                    var entry = change.entry
                    entry.seq = try append(audit: entry)
                    let items = change.announce(entry)
                    var itemIDs: [Int64] = []
                    try insert(items, ids: &itemIDs)
                    for (k, var item) in items.enumerated() {
                        item.id = itemIDs[k]
                        announced.append(item)
                    }
                }
                try statement(.commit).run()
                return ids
            } catch let e as SQLiteError {
                try? db.exec("ROLLBACK")
                for s in statements { s?.reset() }
                seriesIDs.withLock { $0.ids.removeAll() }  // ids created in the rolled-back transaction are gone
                throw e
            } catch {
                try? db.exec("ROLLBACK")
                for s in statements { s?.reset() }
                seriesIDs.withLock { $0.ids.removeAll() }  // ids created in the rolled-back transaction are gone
                throw SQLiteError(code: -1, message: "\(error)")
            }
        }
    }

    /// Inserts outbox items in multi-row `INSERT`s of ``CommitSQL/outboxRows`` rows, then fewer:
    /// `AUTOINCREMENT` reads and writes `sqlite_sequence` once a statement, and a statement's
    /// set-up is paid once for its rows. Appends their ids in order: one statement's rows get
    /// consecutive ids (one writer, each row's id one past the largest ever handed out), the last
    /// of them `sqlite3_last_insert_rowid`.
    private func insert(_ outbox: [OutboxItem], ids: inout [Int64]) throws(SQLiteError) {
        var k = 0
        while k < outbox.count {
            let sql = CommitSQL.insertOutbox(rows: outbox.count - k)
            let n = sql.rows
            let ins = try statement(sql)
            for r in 0..<n {
                let o = outbox[k + r], p = Int32(3 * r)
                ins.bind(p + 1, o.topic)
                ins.bind(p + 2, o.payload)
                ins.bind(p + 3, o.retain ? 1 : 0)
            }
            try ins.run()
            guard db.changes == Int32(n) else { throw SQLiteError(code: -1, message: "outbox: \(db.changes) of \(n) rows inserted") }
            let last = db.lastInsertRowID
            for r in 0..<Int64(n) { ids.append(last - Int64(n) + 1 + r) }
            k += n
        }
    }

    /// The ids as the fewest closed ranges of consecutive ids (sorted; duplicates merged): each
    /// range holds only ids of `ids`.
    package static func runs(_ ids: [Int64]) -> [ClosedRange<Int64>] {
        var runs: [ClosedRange<Int64>] = []
        for id in ids.sorted() {
            if let last = runs.last, id <= last.upperBound &+ 1 {
                if id > last.upperBound { runs[runs.count - 1] = last.lowerBound...id }
            } else {
                runs.append(id...id)
            }
        }
        return runs
    }

    /// A commit-path statement, prepared once (call only while holding `lock`).
    private func statement(_ sql: CommitSQL) throws(SQLiteError) -> SQLiteDatabase.Statement {
        if let s = statements[sql.rawValue] { return s }
        let s = try db.prepare(sql.text)
        statements[sql.rawValue] = s
        return s
    }
}

/// The statements of a commit, named so that finding one costs an array index, not hashing its SQL.
enum CommitSQL: Int, CaseIterable {
    case begin, updateUser, insertUser, deleteFoldedDays, updateChunk, upsertChunk, deleteChunksFrom, insertOutbox, insertOutbox4, insertOutbox16,
        insertOutbox64, deleteOutboxRun,
        upsertHistory, deleteTimelineRow, readHistoryDay, insertHistoryDay, writeHistoryDay, pruneHistoryRows, pruneHistoryDays, commit

    /// The largest outbox insert (rows a statement).
    static let outboxRows = 64

    /// The largest outbox insert of at most `rows` rows.
    static func insertOutbox(rows: Int) -> CommitSQL {
        rows >= outboxRows ? .insertOutbox64 : rows >= 16 ? .insertOutbox16 : rows >= 4 ? .insertOutbox4 : .insertOutbox
    }

    /// Rows an outbox insert writes (1 for the other statements).
    var rows: Int {
        switch self {
        case .insertOutbox64: 64
        case .insertOutbox16: 16
        case .insertOutbox4: 4
        default: 1
        }
    }

    var text: String {
        switch self {
        case .begin: "BEGIN IMMEDIATE"
        case .updateUser: "UPDATE users SET applied_seq = ?2, event_now = ?3, state = ?4, event_claims = ?5 WHERE user = ?1"
        case .insertUser: "INSERT INTO users (user, applied_seq, event_now, state, event_claims) VALUES (?1, ?2, ?3, ?4, ?5)"
        case .updateChunk: "UPDATE user_days SET data = ?4 WHERE user = ?1 AND day = ?2 AND chunk = ?3"
        case .deleteFoldedDays: "DELETE FROM user_days WHERE user = ?1 AND day < ?2"
        case .upsertChunk: "INSERT INTO user_days (user, day, chunk, data) VALUES (?1, ?2, ?3, ?4) ON CONFLICT(user, day, chunk) DO UPDATE SET data = ?4"
        case .deleteChunksFrom: "DELETE FROM user_days WHERE user = ?1 AND day = ?2 AND chunk >= ?3"
        case .insertOutbox, .insertOutbox4, .insertOutbox16, .insertOutbox64:
            "INSERT INTO outbox (topic, payload, retain) VALUES "
                + (0..<rows).map { r in "(?\(3 * r + 1), ?\(3 * r + 2), ?\(3 * r + 3))" }.joined(separator: ", ")
        case .deleteOutboxRun: "DELETE FROM outbox WHERE id >= ?1 AND id <= ?2"
        case .readHistoryDay: "SELECT data FROM history_days WHERE user = ?1 AND day = ?2"
        case .insertHistoryDay: "INSERT INTO history_days (user, day, data) VALUES (?1, ?2, ?3) ON CONFLICT(user, day) DO NOTHING"
        case .writeHistoryDay: "INSERT INTO history_days (user, day, data) VALUES (?1, ?2, ?3) ON CONFLICT(user, day) DO UPDATE SET data = ?3"
        case .deleteTimelineRow: "DELETE FROM history WHERE user = ?1 AND kind = 2 AND key = ?2"
        case .upsertHistory:
            "INSERT INTO history (user, kind, key, day, value, payload) VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(user, kind, key, day) DO UPDATE SET value = ?5, payload = ?6"
        case .pruneHistoryRows: StateStore.pruneRowsSQL
        case .pruneHistoryDays: StateStore.pruneDaysSQL
        case .commit: "COMMIT"
        }
    }
}
