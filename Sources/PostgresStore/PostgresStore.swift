import CLibPQ
import Foundation
import MobilityModel
import StateStore
import Synchronization

import struct RuleEngine.UserSnapshot

/// Durable engine state in PostgreSQL, shared by instances: the same rows and bytes as the SQLite
/// ``StateStore`` (``UserRows``), each commit one transaction sent as one pipeline of batch
/// statements (an array parameter per column, not a statement per row), fenced by the owned
/// partitions' tokens.
///
/// Opening takes the partitions over: their tokens go up by one, so that an instance that held
/// them before fails its next write with ``PostgresError/Code/fenced`` and writes nothing.
///
/// Sendability: `writer` is used only while holding `writeLock`, `reader` only while holding
/// `readLock`; everything else is immutable.
package final class PostgresStore: StateBackend, @unchecked Sendable {
    private let writer: PGConnection
    private let writeLock = Mutex<Void>(())
    private var reader: PGConnection?
    private let readLock = Mutex<Void>(())
    private let conninfo: String
    /// The owner's name, given every session (``PGConnection/init(conninfo:applicationName:)``).
    private let applicationName: String
    /// The partitions this instance owns.
    package let partitions: PartitionSet
    /// The fencing token of each owned partition (in ``PartitionSet/owned`` order), as taken.
    package let tokens: [Int64]
    /// `postgres://host:port/db`, without user or secret: for logs.
    package let location: String
    private let fenceParameters: PGParameters

    /// Whether the server at `url` answers and takes the login: connects and closes, touching no
    /// table. Throws what opening a store would: `.configuration` for a refused URL,
    /// `.connection` for a server that cannot be reached or refuses the login.
    package static func probe(url: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws(PostgresError) {
        _ = try PostgresURL.check(url, environment: environment)
        _ = try PGConnection(conninfo: url)
    }

    /// Connects, creates or migrates the schema and takes the partitions over (raising their
    /// tokens). `url`: a `postgres://` URL or libpq `key=value` string, checked by
    /// ``PostgresURL/check(_:environment:)``; `owner` names this instance in the partitions table.
    /// `claimed`: the tokens of leases already taken (``PartitionLeases/claim(_:)``), in
    /// `partitions.owned` order: the partitions are not taken over again, only fenced by them.
    package init(
        url: String, owner: String, partitions: PartitionSet = .all, claimed: [Int64]? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment
    )
        throws(PostgresError)
    {
        location = try PostgresURL.check(url, environment: environment)
        conninfo = url
        applicationName = owner
        writer = try PGConnection(conninfo: url, applicationName: owner)
        if !PostgresURL.isLocal(writer.host), !writer.usesTLS {
            throw .configuration("the connection to \(writer.host) is not encrypted; use sslmode=verify-full")
        }
        self.partitions = partitions
        try PostgresStore.migrate(writer)
        if let claimed {
            precondition(claimed.count == partitions.owned.count, "a token per owned partition")
            tokens = claimed
        } else {
            tokens = try PostgresStore.takeOver(writer, partitions: partitions, owner: owner)
        }
        var parts = PGArray(of: PGArray.int4), toks = PGArray(of: PGArray.int8)
        for (p, t) in zip(partitions.owned, tokens) {
            parts.append(Int32(p))
            toks.append(t)
        }
        var f = PGParameters()
        f.array(parts)
        f.array(toks)
        fenceParameters = f
    }

    /// Creates or migrates the schema, once across instances (an advisory lock).
    static func migrate(_ c: PGConnection) throws(PostgresError) {
        try c.exec("BEGIN")
        do throws(PostgresError) {
            var lock = PGParameters()
            lock.int64(PostgresSchema.lockKey)
            try c.query("SELECT pg_advisory_xact_lock($1::bigint)", lock)
            try c.exec("CREATE TABLE IF NOT EXISTS mw_schema (version integer NOT NULL)")
            let r = try c.query("SELECT coalesce(max(version), 0)::integer FROM mw_schema")
            var version = Int(r.int32(0, 0))
            guard version <= PostgresSchema.version else {
                throw .schema("the database has schema \(version), newer than this build's \(PostgresSchema.version)")
            }
            while version < PostgresSchema.version {
                try c.exec(PostgresSchema.migrations[version])
                version += 1
            }
            try c.exec("DELETE FROM mw_schema; INSERT INTO mw_schema VALUES (\(version))")
            try c.exec("COMMIT")
        } catch {
            try? c.exec("ROLLBACK")
            throw error
        }
    }

    /// Takes the partitions over: a new row with token 1, or the token raised by one. Waits for
    /// the previous owner's commits under way (they share-lock the rows). Refuses a database
    /// divided into another number of partitions.
    static func takeOver(_ c: PGConnection, partitions: PartitionSet, owner: String) throws(PostgresError) -> [Int64] {
        var count = PGParameters()
        count.text(String(partitions.count))
        var parts = PGArray(of: PGArray.int4)
        for p in partitions.owned { parts.append(Int32(p)) }
        var take = PGParameters()
        take.array(parts)
        take.text(owner)
        let r = try c.pipeline([
            ("INSERT INTO meta (key, value) VALUES ('partition_count', $1::text) ON CONFLICT (key) DO NOTHING", count),
            ("SELECT value FROM meta WHERE key = 'partition_count'", PGParameters()),
            (
                """
                INSERT INTO partitions (partition, token, owner) SELECT p, 1, $2::text FROM unnest($1::integer[]) AS p
                ON CONFLICT (partition) DO UPDATE SET token = partitions.token + 1, owner = EXCLUDED.owner, acquired_at = now()
                RETURNING partition, token
                """, take
            )
        ])
        let stored = r[1].text(0, 0)
        guard stored == String(partitions.count) else {
            throw .schema("the database's users are in \(stored) partitions, not \(partitions.count)")
        }
        var byPartition: [Int32: Int64] = [:]
        for k in 0..<r[2].rows { byPartition[r[2].int32(k, 0)] = r[2].int64(k, 1) }
        return try partitions.owned.map { (p) throws(PostgresError) in
            guard let t = byPartition[Int32(p)] else { throw .schema("partition \(p) was not taken") }
            return t
        }
    }

    /// The fence statement, first in every write transaction.
    var fence: (sql: String, parameters: PGParameters) { ("SELECT mw_fence($1::integer[], $2::bigint[])", fenceParameters) }

    /// Runs `steps` after the fence in one pipelined transaction, on the writing connection.
    func fenced(_ steps: [(sql: String, parameters: PGParameters)]) throws(PostgresError) -> [PGResult] {
        try writeLock.withLock { (_) throws(PostgresError) -> [PGResult] in
            Array(try writer.pipeline([fence] + steps).dropFirst())
        }
    }

    /// Runs `body` in a fenced transaction of its own (for writes whose later statements need
    /// earlier results), on the writing connection.
    func fencedTransaction<T>(_ body: (PGConnection) throws -> T) throws -> T {
        try writeLock.withLock { _ in
            try writer.exec("BEGIN")
            do {
                try writer.query(fence.sql, fence.parameters)
                let r = try body(writer)
                try writer.exec("COMMIT")
                return r
            } catch {
                try? writer.exec("ROLLBACK")
                throw error
            }
        }
    }

    /// Runs `body` on the reading connection (never waits for a commit).
    func reading<T>(_ body: (PGConnection) throws -> T) throws -> T {
        try readLock.withLock { _ in
            if reader == nil { reader = try PGConnection(conninfo: conninfo, applicationName: applicationName) }
            return try body(reader!)
        }
    }

    /// Reads every user of the owned partitions (each user's head with its open-day rows, one
    /// row per user, streamed) and the pending outbox.
    package func load<Prepared: Sendable>(
        alertNames: [String], prepare: @escaping @Sendable (UserSnapshot) -> Prepared
    ) throws -> (users: [StoredUser<Prepared>], outbox: [StateStore.OutboxItem]) {
        var users: [StoredUser<Prepared>] = []
        var outbox: [StateStore.OutboxItem] = []
        var parts = PGArray(of: PGArray.int4)
        for p in partitions.owned { parts.append(Int32(p)) }
        var p = PGParameters()
        p.array(parts)
        try writeLock.withLock { _ in
            var openDays = UserRows.OpenDays()
            var dayNumbers: [DayNumber] = []
            try writer.stream(
                """
                SELECT u.user_id, u.applied_seq, u.event_now, u.state, u.event_claims, d.days, d.chunks
                FROM users u LEFT JOIN LATERAL (
                    SELECT array_agg(day ORDER BY day, chunk) AS days, array_agg(data ORDER BY day, chunk) AS chunks
                    FROM user_days WHERE user_id = u.user_id AND u.state IS NOT NULL) d ON true
                WHERE u.partition = ANY($1::integer[]) ORDER BY u.user_id
                """, p
            ) { r in
                let user = r.text(0, 0)
                let seq = UInt64(bitPattern: r.int64(0, 1))
                let eventNow = r.isNull(0, 2) ? nil : Timestamp(milliseconds: r.int64(0, 2))
                let claims = r.isNull(0, 4) ? [] : UserRows.decodeClaims(r.bytes(0, 4))
                guard !r.isNull(0, 3) else {
                    users.append(StoredUser(user: user, appliedSeq: seq, eventNow: eventNow, eventClaims: claims, state: nil))
                    return
                }
                var state = try UserRows.decodeHead(user: user, r.bytes(0, 3), alertNames: alertNames)
                openDays.reset()
                dayNumbers.removeAll(keepingCapacity: true)
                r.forEachElement(0, 5) { v in if let v, v.count == 4 { dayNumbers.append(PGWire.read(Int32.self, v.baseAddress!)) } }
                var k = 0
                try r.forEachElement(0, 6) { v in
                    guard k < dayNumbers.count else { return }
                    try openDays.append(day: dayNumbers[k], chunk: v.map { Array($0) } ?? [], user: user)
                    k += 1
                }
                openDays.finish(into: &state)
                users.append(StoredUser(user: user, appliedSeq: seq, eventNow: eventNow, eventClaims: claims, state: prepare(state)))
            }
            let o = try writer.query("SELECT id, topic, payload, retain FROM outbox ORDER BY id")
            outbox.reserveCapacity(o.rows)
            for k in 0..<o.rows {
                outbox.append(StateStore.OutboxItem(id: o.int64(k, 0), topic: o.text(k, 1), payload: o.bytes(k, 2), retain: o.bool(k, 3)))
            }
        }
        return (users, outbox)
    }

    /// Writes the users' changes, appends `outbox`, removes the `acknowledged` outbox ids and
    /// records the `history` rows in one fenced transaction: one pipeline of at most a dozen
    /// statements, whatever the number of rows. Returns the new outbox ids in order.
    package func commit(users: [StateStore.UserRecord], outbox: [StateStore.OutboxItem], acknowledged: [Int64], history: [HistoryRecord]) throws -> [Int64] {
        try commit(users: users, outbox: outbox, acknowledged: acknowledged, history: history, audited: [], streamSequences: [:]).ids
    }

    /// ``commit(users:outbox:acknowledged:history:)`` with care-staff changes and the partitions'
    /// stream sequences, in one fenced transaction: one pipeline without care-staff changes;
    /// with them, not (the announcing outputs need their audit rows' numbers; staff changes are
    /// rare). Returns `outbox`'s ids in order and the announcing items.
    package func commit(
        users: [StateStore.UserRecord], outbox: [StateStore.OutboxItem], acknowledged: [Int64], history: [HistoryRecord], audited: [AuditedChange],
        streamSequences: [Int: UInt64]
    ) throws -> (ids: [Int64], announced: [StateStore.OutboxItem]) {
        var batch = CommitBatch(partitions: partitions)
        batch.add(users: users)
        batch.add(outbox: outbox)
        batch.add(acknowledged: acknowledged)
        batch.add(history: history)
        batch.add(streamSequences: streamSequences)
        let (steps, outboxStep) = batch.statements()
        func ids(_ r: PGResult?) throws -> [Int64] {
            // Ids are drawn in the insert's order (ORDER BY the items' ordinality).
            let ids = r.map { r in (0..<r.rows).map { r.int64($0, 0) }.sorted() } ?? []
            guard ids.count == outbox.count else {
                throw PostgresError.statement("outbox insert returned \(ids.count) ids for \(outbox.count) items", sqlState: nil)
            }
            return ids
        }
        guard !audited.isEmpty else {
            if steps.isEmpty { return ([], []) }
            let results = try fenced(steps)
            return (try ids(outboxStep.map { results[$0] }), [])
        }
        return try fencedTransaction { c in
            var inserted: PGResult?
            for (k, step) in steps.enumerated() {
                let r = try c.query(step.sql, step.parameters)
                if k == outboxStep { inserted = r }
            }
            let outboxIDs = try ids(inserted)
            var announced: [StateStore.OutboxItem] = []
            for change in audited {
                announced += try PostgresStore.appendAudit(change.entry, outbox: change.announce, partitions: partitions, on: c).1
            }
            return (outboxIDs, announced)
        }
    }

    /// Nothing to do between commits (PostgreSQL checkpoints itself).
    package func checkpoint() throws {}

    /// PostgreSQL checkpoints itself: no timer needs to wake for ``checkpoint()``.
    package var needsCheckpoints: Bool { false }
}
