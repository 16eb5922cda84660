extension PostgresStore {
    /// The stream sequence each owned partition's input is committed through (0: none yet), as
    /// recorded by ``recordStreamSequence(_:partition:)``; fenced: a partition taken over since
    /// is ``PostgresError/Code/fenced``.
    package func streamSequences() throws(PostgresError) -> [Int: UInt64] {
        var parts = PGArray(of: PGArray.int4)
        for p in partitions.owned { parts.append(Int32(p)) }
        var q = PGParameters()
        q.array(parts)
        let r = try fenced([("SELECT partition, stream_seq FROM partitions WHERE partition = ANY($1::integer[])", q)])[0]
        var out: [Int: UInt64] = [:]
        for i in 0..<r.rows { out[Int(r.int32(i, 0))] = UInt64(bitPattern: r.int64(i, 1)) }
        return out
    }

    /// Records that partition `k`'s input is committed through stream sequence `seq` (every
    /// message of it up to `seq` was applied by a commit before this call); fenced, and never
    /// moved back.
    package func recordStreamSequence(_ seq: UInt64, partition k: Int) throws(PostgresError) {
        var q = PGParameters()
        q.int32(Int32(k))
        q.int64(Int64(bitPattern: seq))
        _ = try fenced([("UPDATE partitions SET stream_seq = greatest(stream_seq, $2::bigint) WHERE partition = $1::integer", q)])
    }
}
