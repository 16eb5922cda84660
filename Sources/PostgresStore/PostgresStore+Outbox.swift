import StateStore

extension PostgresStore {
    /// Removes acknowledged outbox items (fenced).
    package func acknowledge(_ ids: [Int64]) throws {
        guard !ids.isEmpty else { return }
        _ = try commit(users: [], outbox: [], acknowledged: ids, history: [])
    }

    /// Moves refused outbox items to the dead letters, keeping the newest
    /// ``StateStore/maxDeadLetters``; returns how many there are (fenced).
    @discardableResult
    package func park(_ items: [(id: Int64, reason: String)], at: Int64) throws -> Int {
        var ids = PGArray(of: PGArray.int8), reasons = PGArray(of: PGArray.text)
        for i in items {
            ids.append(i.id)
            reasons.append(i.reason)
        }
        var move = PGParameters()
        move.array(ids)
        move.array(reasons)
        move.int64(at)
        var del = PGParameters()
        del.array(ids)
        var keep = PGParameters()
        keep.int64(Int64(StateStore.maxDeadLetters))
        let r = try fenced([
            (
                """
                INSERT INTO dead_letters (id, topic, payload, retain, reason, at)
                SELECT o.id, o.topic, o.payload, o.retain, x.reason, $3::bigint FROM outbox o JOIN unnest($1::bigint[], $2::text[]) AS x(id, reason) ON o.id = x.id
                ON CONFLICT (id) DO NOTHING
                """, move
            ),
            ("DELETE FROM outbox WHERE id = ANY($1::bigint[])", del),
            ("DELETE FROM dead_letters WHERE id NOT IN (SELECT id FROM dead_letters ORDER BY id DESC LIMIT $1::bigint)", keep),
            ("SELECT count(*)::bigint FROM dead_letters", PGParameters())
        ])
        return Int(r[3].int64(0, 0))
    }

    /// The parked outputs, oldest first (topics and reasons only).
    package func deadLetters() throws -> [StateStore.DeadLetter] {
        try reading { c in
            let r = try c.query("SELECT id, topic, reason, at FROM dead_letters ORDER BY id")
            return (0..<r.rows).map { StateStore.DeadLetter(id: r.int64($0, 0), topic: r.text($0, 1), reason: r.text($0, 2), at: r.int64($0, 3)) }
        }
    }

    /// Reads a metadata value.
    package func meta(_ key: String) throws -> String? {
        var p = PGParameters()
        p.text(key)
        return try reading { c in
            let r = try c.query("SELECT value FROM meta WHERE key = $1::text", p)
            return r.rows > 0 ? r.text(0, 0) : nil
        }
    }

    /// Writes a metadata value (fenced).
    package func setMeta(_ key: String, _ value: String) throws {
        var p = PGParameters()
        p.text(key)
        p.text(value)
        _ = try fenced([("INSERT INTO meta (key, value) VALUES ($1::text, $2::text) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", p)])
    }

    /// The number of pending outbox items.
    package func outboxCount() throws -> Int {
        try reading { c in Int(try c.query("SELECT count(*)::bigint FROM outbox").int64(0, 0)) }
    }
}
