import MobilityModel

extension StateStore {
    /// SQL of the silences table and the audit trail's `detail` (schema 7).
    static let silencesMigration = """
        CREATE TABLE silences (id TEXT PRIMARY KEY, team TEXT NOT NULL, ends_at INTEGER NOT NULL, payload BLOB NOT NULL);
        ALTER TABLE audit ADD COLUMN detail TEXT;
        """

    /// Records a new silence (its ``Silence/json(state:)`` without status), appends its audit row
    /// and the outputs that announce it, in one transaction; returns the outputs with their
    /// outbox ids. Fails (nothing changed) when a silence with its id exists.
    package func recordSilence(
        _ s: Silence, audit: AuditEntry, outbox: (AuditEntry) -> [OutboxItem]
    ) throws -> [OutboxItem] {
        try auditedTransaction(audit, outbox) {
            let q = try db.prepare("INSERT INTO silences (id, team, ends_at, payload) VALUES (?1, ?2, ?3, ?4)")
            q.bind(1, s.id); q.bind(2, s.team); q.bind(3, s.endsAt.milliseconds); q.bind(4, Array(s.json().utf8))
            try q.run()
        }
    }

    /// Removes an expired (or expired early) silence, appends its audit row and the outputs
    /// that announce it, in one transaction; returns the outputs with their outbox ids.
    package func expireSilence(id: String, audit: AuditEntry, outbox: (AuditEntry) -> [OutboxItem]) throws -> [OutboxItem] {
        try auditedTransaction(audit, outbox) {
            let q = try db.prepare("DELETE FROM silences WHERE id = ?1")
            q.bind(1, id)
            try q.run()
        }
    }

    /// The stored silences (pending or active when last written), by id; a row that no longer
    /// parses is skipped and named in `unreadable`.
    package func silences() throws -> (silences: [Silence], unreadable: [String]) {
        try lock.withLock { _ in
            let q = try db.prepare("SELECT id, payload FROM silences ORDER BY id")
            var out: [Silence] = [], bad: [String] = []
            while try q.step() {
                if let s = Silence.parse(q.blob(1)) { out.append(s) } else { bad.append(q.text(0)) }
            }
            return (out, bad)
        }
    }

    /// Runs `change`, appends `audit` and the outbox items `outbox` makes of it, atomically;
    /// returns the outputs with their outbox ids (the audit row's number: ``auditedChange(_:_:_:)``).
    func auditedTransaction(
        _ audit: AuditEntry, _ outbox: (AuditEntry) -> [OutboxItem], _ change: () throws -> Void
    ) throws -> [OutboxItem] {
        try auditedChange(audit, outbox, change).outbox
    }

    /// ``auditedTransaction(_:_:_:)`` with the audit row's sequence number.
    func auditedChange(
        _ audit: AuditEntry, _ outbox: (AuditEntry) -> [OutboxItem], _ change: () throws -> Void
    ) throws -> (seq: Int64, outbox: [OutboxItem]) {
        try lock.withLock { _ in
            try db.exec("BEGIN IMMEDIATE")
            do {
                try change()
                var entry = audit
                entry.seq = try append(audit: entry)
                var items = outbox(entry)
                let out = try db.prepare("INSERT INTO outbox (topic, payload, retain) VALUES (?1, ?2, ?3)")
                for k in items.indices {
                    out.bind(1, items[k].topic); out.bind(2, items[k].payload); out.bind(3, items[k].retain ? 1 : 0)
                    try out.run()
                    items[k].id = db.lastInsertRowID
                }
                try db.exec("COMMIT")
                return (entry.seq, items)
            } catch {
                try? db.exec("ROLLBACK")
                throw error
            }
        }
    }
}
