extension PostgresStore {
    /// Where a partition's input stands in the stream it is consumed from.
    package struct StreamMark: Sendable, Equatable {
        /// The stream sequence the partition's input is committed through (0: none yet).
        package var sequence: UInt64
        /// The creation time of the stream those sequences are of (0: never consumed from a stream).
        package var created: Int64
        package init(sequence: UInt64, created: Int64) {
            self.sequence = sequence
            self.created = created
        }
    }

    /// Each owned partition's ``StreamMark``, as recorded by ``recordStreamIdentity(_:partition:)``
    /// and the commits (``commit(users:outbox:acknowledged:history:audited:streamSequences:)``); fenced: a partition taken over since is
    /// ``PostgresError/Code/fenced``.
    package func streamMarks() throws(PostgresError) -> [Int: StreamMark] {
        var parts = PGArray(of: PGArray.int4)
        for p in partitions.owned { parts.append(Int32(p)) }
        var q = PGParameters()
        q.array(parts)
        let r = try fenced([("SELECT partition, stream_seq, stream_created FROM partitions WHERE partition = ANY($1::integer[])", q)])[0]
        var out: [Int: StreamMark] = [:]
        for i in 0..<r.rows { out[Int(r.int32(i, 0))] = StreamMark(sequence: UInt64(bitPattern: r.int64(i, 1)), created: r.int64(i, 2)) }
        return out
    }

    /// How many users of partition `k` have applied some input (`applied_seq` above 0).
    package func usersWithAppliedInput(partition k: Int) throws(PostgresError) -> Int {
        var q = PGParameters()
        q.int32(Int32(k))
        let r = try fenced([("SELECT count(*) FROM users WHERE partition = $1::integer AND applied_seq > 0", q)])[0]
        return Int(r.int64(0, 0))
    }

    /// Records that partition `k`'s input is consumed from the stream made at `created` (its
    /// sequences are the ones commits record: ``commit(users:outbox:acknowledged:history:audited:streamSequences:)``); fenced.
    package func recordStreamIdentity(_ created: Int64, partition k: Int) throws(PostgresError) {
        var q = PGParameters()
        q.int32(Int32(k))
        q.int64(created)
        _ = try fenced([("UPDATE partitions SET stream_created = $2::bigint WHERE partition = $1::integer", q)])
    }
}
