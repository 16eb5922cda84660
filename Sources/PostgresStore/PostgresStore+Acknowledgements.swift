import MobilityModel
import StateStore

extension PostgresStore {
    /// Records an acknowledgement, its audit row and the outputs that announce it in one fenced
    /// transaction (the outputs need the audit row's number, so it is not one pipeline; care-staff
    /// actions are rare). Fails, writing nothing, when the instance is already acknowledged.
    package func recordAcknowledgement(
        _ a: StoredAcknowledgement, audit: AuditEntry, outbox: (AuditEntry) -> [StateStore.OutboxItem]
    ) throws -> (seq: Int64, outbox: [StateStore.OutboxItem]) {
        try fencedTransaction { c in
            var ack = PGParameters()
            ack.text(a.alert)
            ack.text(a.user)
            ack.text(a.rule)
            ack.text(a.team)
            ack.text(a.acknowledgement.by)
            ack.int64(a.acknowledgement.at.milliseconds)
            if let n = a.acknowledgement.note { ack.text(n) } else { ack.null() }
            ack.bytea(a.payload)
            try c.query(
                """
                INSERT INTO acknowledgements (alert, user_id, rule, team, acked_by, at, note, payload)
                VALUES ($1::text, $2::text, $3::text, $4::text, $5::text, $6::bigint, $7::text, $8::bytea)
                """, ack)
            let (entry, items) = try PostgresStore.appendAudit(audit, outbox: outbox, partitions: partitions, on: c)
            return (entry.seq, items)
        }
    }

    /// Appends an audit row (its number assigned) and the outputs `outbox` makes of it, in the
    /// caller's transaction; returns both, the outputs with their outbox ids.
    static func appendAudit(
        _ audit: AuditEntry, outbox: (AuditEntry) -> [StateStore.OutboxItem], partitions: PartitionSet, on c: PGConnection
    ) throws -> (AuditEntry, [StateStore.OutboxItem]) {
        var row = PGParameters()
        row.int64(audit.at.milliseconds)
        for t in [audit.action, audit.actor, audit.team, audit.user, audit.rule, audit.subject] { row.text(t) }
        if let n = audit.note { row.text(n) } else { row.null() }
        if let d = audit.detail { row.text(d) } else { row.null() }
        let r = try c.query(
            """
            INSERT INTO audit (at, action, actor, team, user_id, rule, subject, note, detail)
            VALUES ($1::bigint, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text, $9::text) RETURNING seq
            """, row)
        var entry = audit
        entry.seq = r.int64(0, 0)
        var items = outbox(entry)
        var batch = CommitBatch(partitions: partitions)
        batch.add(outbox: items)
        if let step = batch.statements().steps.first {
            let ids = try c.query(step.sql, step.parameters)
            let sorted = (0..<ids.rows).map { ids.int64($0, 0) }.sorted()
            for k in items.indices where k < sorted.count { items[k].id = sorted[k] }
        }
        return (entry, items)
    }

    /// The acknowledgements of instances still firing, oldest first.
    package func alertAcknowledgements() throws -> [StoredAcknowledgement] {
        try reading { c in
            let r = try c.query("SELECT alert, user_id, rule, team, acked_by, at, note, payload FROM acknowledgements ORDER BY at, alert")
            return (0..<r.rows).map { k in
                let ack = AlertAcknowledgement(by: r.text(k, 4), at: Timestamp(milliseconds: r.int64(k, 5)), note: r.isNull(k, 6) ? nil : r.text(k, 6))
                return StoredAcknowledgement(
                    alert: r.text(k, 0), user: r.text(k, 1), rule: r.text(k, 2), team: r.text(k, 3), acknowledgement: ack, payload: r.bytes(k, 7))
            }
        }
    }

    /// Forgets the acknowledgements of resolved instances (fenced).
    package func clearAcknowledgements(_ alerts: [String]) throws {
        guard !alerts.isEmpty else { return }
        var ids = PGArray(of: PGArray.text)
        for a in alerts { ids.append(a) }
        var p = PGParameters()
        p.array(ids)
        _ = try fenced([("DELETE FROM acknowledgements WHERE alert = ANY($1::text[])", p)])
    }

    /// The audit trail, oldest first (at most the last `limit` rows).
    package func auditTrail(limit: Int) throws -> [AuditEntry] {
        var p = PGParameters()
        p.int64(Int64(limit))
        return try auditRows(
            "SELECT seq, at, action, actor, team, user_id, rule, subject, note, detail FROM (SELECT * FROM audit ORDER BY seq DESC LIMIT $1::bigint) a ORDER BY seq",
            p)
    }

    /// `user`'s audit rows of `action`, oldest first (at most the last `limit`): a range of the
    /// `audit_by_user` index.
    package func auditTrail(of user: String, action: String, limit: Int) throws -> [AuditEntry] {
        var p = PGParameters()
        p.text(user)
        p.text(action)
        p.int64(Int64(limit))
        return try auditRows(
            "SELECT seq, at, action, actor, team, user_id, rule, subject, note, detail FROM "
                + "(SELECT * FROM audit WHERE user_id = $1 AND action = $2 ORDER BY seq DESC LIMIT $3::bigint) a ORDER BY seq",
            p)
    }

    private func auditRows(_ sql: String, _ p: PGParameters) throws -> [AuditEntry] {
        try reading { c in
            let r = try c.query(sql, p)
            return (0..<r.rows).map { k in
                AuditEntry(
                    seq: r.int64(k, 0), at: Timestamp(milliseconds: r.int64(k, 1)), action: r.text(k, 2), actor: r.text(k, 3), team: r.text(k, 4),
                    user: r.text(k, 5), rule: r.text(k, 6), subject: r.text(k, 7), note: r.isNull(k, 8) ? nil : r.text(k, 8),
                    detail: r.isNull(k, 9) ? nil : r.text(k, 9))
            }
        }
    }
}
