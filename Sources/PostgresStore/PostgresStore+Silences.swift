import MobilityModel
import StateStore

extension PostgresStore {
    /// Records a new silence, its audit row and the outputs that announce it in one fenced
    /// transaction; fails (nothing written) when a silence with its id exists.
    package func recordSilence(_ s: Silence, audit: AuditEntry, outbox: (AuditEntry) -> [StateStore.OutboxItem]) throws -> [StateStore.OutboxItem] {
        try fencedTransaction { c in
            var p = PGParameters()
            p.text(s.id)
            p.text(s.team)
            p.int64(s.endsAt.milliseconds)
            p.bytea(Array(s.json().utf8))
            try c.query("INSERT INTO silences (id, team, ends_at, payload) VALUES ($1::text, $2::text, $3::bigint, $4::bytea)", p)
            return try PostgresStore.appendAudit(audit, outbox: outbox, partitions: partitions, on: c).1
        }
    }

    /// Removes a silence, appends its audit row and the outputs that announce it, in one fenced transaction.
    package func expireSilence(id: String, audit: AuditEntry, outbox: (AuditEntry) -> [StateStore.OutboxItem]) throws -> [StateStore.OutboxItem] {
        try fencedTransaction { c in
            var p = PGParameters()
            p.text(id)
            try c.query("DELETE FROM silences WHERE id = $1::text", p)
            return try PostgresStore.appendAudit(audit, outbox: outbox, partitions: partitions, on: c).1
        }
    }

    /// The stored silences by id; a row that no longer parses is named in `unreadable`.
    package func silences() throws -> (silences: [Silence], unreadable: [String]) {
        try reading { c in
            let r = try c.query("SELECT id, payload FROM silences ORDER BY id")
            var out: [Silence] = [], bad: [String] = []
            for k in 0..<r.rows {
                if let s = Silence.parse(r.bytes(k, 1)) { out.append(s) } else { bad.append(r.text(k, 0)) }
            }
            return (out, bad)
        }
    }
}
