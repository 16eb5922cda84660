import Foundation
import Synchronization

/// Leases on partitions in the shared database: which instance owns which partition until when.
/// A lease is a row of `partitions` (owner, token, `lease_until` by the database's clock, the one
/// clock every instance agrees on); claiming an expired or released partition raises its fencing
/// token, so the previous owner's commits fail (``PostgresStore``'s fence) whatever it believes.
/// Instances announce themselves in `instances` (alive until a heartbeat's expiry), so each can
/// count the live ones and claim its share.
///
/// Sendability: the connection is used only while holding `lock`.
package final class PartitionLeases: @unchecked Sendable {
    private let connection: PGConnection
    private let lock = Mutex<Void>(())
    /// This instance's name in `partitions.owner` and `instances` (unique per process).
    package let owner: String
    /// The number of partitions.
    package let count: Int
    /// How long a lease or an instance's heartbeat lasts unrenewed, in milliseconds.
    package let leaseMs: Int

    /// A partition held: its number and fencing token.
    package struct Lease: Sendable, Hashable {
        /// The partition.
        package var partition: Int
        /// Its fencing token, raised by this claim.
        package var token: Int64
    }

    /// Connects, migrates the schema and makes the `count` partition rows (unowned, expired) if
    /// they are missing; refuses a database divided into another number of partitions.
    package init(
        url: String, owner: String, count: Int, leaseMs: Int, environment: [String: String] = ProcessInfo.processInfo.environment
    )
        throws(PostgresError)
    {
        _ = try PostgresURL.check(url, environment: environment)
        connection = try PGConnection(conninfo: url, applicationName: owner)
        if !PostgresURL.isLocal(connection.host), !connection.usesTLS {
            throw .configuration("the connection to \(connection.host) is not encrypted; use sslmode=verify-full")
        }
        self.owner = owner
        self.count = count
        self.leaseMs = leaseMs
        try PostgresStore.migrate(connection)
        var c = PGParameters()
        c.text(String(count))
        var n = PGParameters()
        n.int32(Int32(count))
        let r = try connection.pipeline([
            ("INSERT INTO meta (key, value) VALUES ('partition_count', $1::text) ON CONFLICT (key) DO NOTHING", c),
            ("SELECT value FROM meta WHERE key = 'partition_count'", PGParameters()),
            (
                "INSERT INTO partitions (partition, token, owner, lease_until) SELECT g, 0, '', '-infinity' FROM generate_series(0, $1::integer - 1) g ON CONFLICT (partition) DO NOTHING",
                n
            )
        ])
        guard r[1].text(0, 0) == String(count) else { throw .schema("the database's users are in \(r[1].text(0, 0)) partitions, not \(count)") }
    }

    /// Announces this instance alive for a lease and renews the leases it holds (at their
    /// tokens); returns the live instances (this one included) and the leases still held. A lease
    /// missing from the answer was lost (taken after it expired).
    package func heartbeat(holding held: [Lease]) throws(PostgresError) -> (liveInstances: Int, held: [Lease]) {
        var me = PGParameters()
        me.text(owner)
        me.int64(Int64(leaseMs))
        var parts = PGArray(of: PGArray.int4), toks = PGArray(of: PGArray.int8)
        for l in held {
            parts.append(Int32(l.partition))
            toks.append(l.token)
        }
        var renew = PGParameters()
        renew.text(owner)
        renew.int64(Int64(leaseMs))
        renew.array(parts)
        renew.array(toks)
        let r = try lock.withLock { (_) throws(PostgresError) -> [PGResult] in
            try connection.pipeline([
                (
                    "INSERT INTO instances (instance, alive_until) VALUES ($1::text, now() + $2::bigint * interval '1 millisecond') ON CONFLICT (instance) DO UPDATE SET alive_until = EXCLUDED.alive_until",
                    me
                ),
                ("DELETE FROM instances WHERE alive_until < now() - interval '1 hour'", PGParameters()),
                ("SELECT count(*) FROM instances WHERE alive_until > now()", PGParameters()),
                (
                    Self.mine(owner: "$1", partitions: "$3", tokens: "$4", live: true)
                        + " UPDATE partitions p SET lease_until = now() + $2::bigint * interval '1 millisecond' FROM mine WHERE p.partition = mine.partition RETURNING p.partition, p.token",
                    renew
                )
            ])
        }
        var kept: [Lease] = []
        for k in 0..<r[3].rows { kept.append(Lease(partition: Int(r[3].int32(k, 0)), token: r[3].int64(k, 1))) }
        return (Int(r[2].int64(0, 0)), kept.sorted { $0.partition < $1.partition })
    }

    /// Claims up to `n` partitions whose lease expired (or was released), lowest first, raising
    /// their tokens; concurrent claimers skip each other's rows. First ends the sessions (of this
    /// role) of owners whose lease ran out that have waited on their client inside a transaction
    /// for a whole lease: a paused owner's locks would keep its rows from every claim. Returns
    /// the leases taken.
    package func claim(_ n: Int) throws(PostgresError) -> [Lease] {
        guard n > 0 else { return [] }
        var p = PGParameters()
        p.text(owner)
        p.int64(Int64(leaseMs))
        p.int32(Int32(n))
        var stale = PGParameters()
        stale.int64(Int64(leaseMs))
        let r = try lock.withLock { (_) throws(PostgresError) -> PGResult in
            // A session of an owner whose lease ran out that has waited on its client for a
            // whole lease inside a transaction — the owner paused or cut off in the middle of a
            // commit — holds its partitions' rows locked (the fence), which the claim below skips.
            // Ended here (and waited for, up to a second), its locks go with it and the claim
            // takes the rows. Safe: the lease ran out, so the owner's next heartbeat drops those
            // partitions anyway, and nothing is acknowledged to anyone before a commit. Only
            // sessions of this role are ended (what a role may end); a failure here leaves the
            // claim as it was.
            _ = try? connection.query(
                """
                SELECT pg_terminate_backend(a.pid, least($1::bigint, 1000)) FROM pg_stat_activity a
                WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND a.usename = current_user
                  AND a.xact_start < now() - $1::bigint * interval '1 millisecond'
                  AND a.state_change < now() - $1::bigint * interval '1 millisecond'
                  AND (a.state = 'idle in transaction' OR (a.state = 'active' AND a.wait_event = 'ClientRead'))
                  AND a.application_name IN (SELECT left(owner, 63) FROM partitions WHERE lease_until <= now() AND lease_until > '-infinity')
                """, stale)
            return try connection.query(
                """
                WITH free AS (SELECT partition FROM partitions WHERE lease_until <= now() ORDER BY partition LIMIT $3::integer FOR UPDATE SKIP LOCKED)
                UPDATE partitions p SET token = p.token + 1, owner = $1::text, lease_until = now() + $2::bigint * interval '1 millisecond', acquired_at = now()
                FROM free WHERE p.partition = free.partition RETURNING p.partition, p.token
                """, p)
        }
        return (0..<r.rows).map { Lease(partition: Int(r.int32($0, 0)), token: r.int64($0, 1)) }.sorted { $0.partition < $1.partition }
    }

    /// Gives leases up (after this instance stopped processing them), so another takes them at once.
    package func release(_ leases: [Lease]) throws(PostgresError) {
        guard !leases.isEmpty else { return }
        var parts = PGArray(of: PGArray.int4), toks = PGArray(of: PGArray.int8)
        for l in leases {
            parts.append(Int32(l.partition))
            toks.append(l.token)
        }
        var p = PGParameters()
        p.text(owner)
        p.array(parts)
        p.array(toks)
        _ = try lock.withLock { (_) throws(PostgresError) -> PGResult in
            try connection.query(
                Self.mine(owner: "$1", partitions: "$2", tokens: "$3", live: false)
                    + " UPDATE partitions p SET lease_until = '-infinity' FROM mine WHERE p.partition = mine.partition RETURNING p.partition", p)
        }
    }

    /// `WITH mine AS (…)`: the rows of the owner's leases among the partitions and tokens given
    /// (query parameters), live ones only when `live`, locked in partition order — the order the
    /// fence (`mw_fence`) locks them in, so that an owner's heartbeat or release and its own
    /// commits never deadlock.
    private static func mine(owner: String, partitions: String, tokens: String, live: Bool) -> String {
        """
        WITH mine AS (
            SELECT p.partition FROM partitions p JOIN unnest(\(partitions)::integer[], \(tokens)::bigint[]) AS o(part, tok) ON p.partition = o.part AND p.token = o.tok
            WHERE p.owner = \(owner)::text\(live ? " AND p.lease_until > now()" : "") ORDER BY p.partition FOR UPDATE OF p)
        """
    }

    /// Says this instance is gone (a clean stop), so the others rebalance without waiting.
    package func leave() throws(PostgresError) {
        var p = PGParameters()
        p.text(owner)
        _ = try lock.withLock { (_) throws(PostgresError) -> PGResult in try connection.query("DELETE FROM instances WHERE instance = $1::text", p) }
    }
}
