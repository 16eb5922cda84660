import MobilityModel

/// A stored acknowledgement of a firing alert instance (``StateStore/recordAcknowledgement(_:audit:outbox:)``).
package struct StoredAcknowledgement: Hashable, Sendable {
    /// The alert instance id.
    package var alert: String
    /// The user the alert is about.
    package var user: String
    /// The alert's rule.
    package var rule: String
    /// The team whose command topic it came on.
    package var team: String
    /// Who acknowledged it, when, and their note.
    package var acknowledgement: AlertAcknowledgement
    /// The acknowledged firing payload (retained on the alert topic while the instance fires).
    package var payload: [UInt8]

    package init(alert: String, user: String, rule: String, team: String, acknowledgement: AlertAcknowledgement, payload: [UInt8]) {
        self.alert = alert
        self.user = user
        self.rule = rule
        self.team = team
        self.acknowledgement = acknowledgement
        self.payload = payload
    }
}

/// One row of the audit trail: a care-staff action (`acknowledge`, `silence`, `expire`),
/// appended, never changed. `subject` is what it acts on (an alert instance id, a silence id).
package struct AuditEntry: Hashable, Sendable {
    /// The row's sequence number (assigned on append; 0 before).
    package var seq: Int64
    /// When (daemon wall clock).
    package var at: Timestamp
    /// What was done: `acknowledge`, `silence` (a silence added) or `expire` (one expired: by staff, or by `mobilityd` at its end).
    package var action: String
    /// Who (the command's `by`).
    package var actor: String
    /// The team whose command topic it came on.
    package var team: String
    /// The user the alert is about.
    package var user: String
    /// The alert's rule.
    package var rule: String
    /// What it acts on: an alert instance id or a silence id.
    package var subject: String
    /// The free-text note, if any (bounded; never logged).
    package var note: String?
    /// What a silence covers (its matchers and period), for `silence` and `expire` rows; nil otherwise.
    package var detail: String?

    package init(
        seq: Int64 = 0, at: Timestamp, action: String, actor: String, team: String, user: String, rule: String, subject: String, note: String?,
        detail: String? = nil
    ) {
        self.seq = seq
        self.at = at
        self.action = action
        self.actor = actor
        self.team = team
        self.user = user
        self.rule = rule
        self.subject = subject
        self.note = note
        self.detail = detail
    }

    /// The JSON published on the audit topic and printed by `mobilityctl audit --output json`.
    package var json: String {
        var w = JSONWriter()
        w.beginObject()
        w.number("seq", Double(seq))
        w.string("at", at.description)
        w.string("action", action)
        w.string("by", actor)
        w.string("team", team)
        w.string("user", user)
        w.string("rule", rule)
        w.string("subject", subject)
        if let note { w.string("note", note) }
        if let detail { w.string("detail", detail) }
        w.endObject()
        return w.text
    }
}

/// A care-staff change committed with the users' state it made
/// (``StateBackend/commit(users:outbox:acknowledged:history:audited:)``): its audit row, numbered
/// on append, and the outputs that announce it, made from the numbered row.
package struct AuditedChange: Sendable {
    /// The audit row (``AuditEntry/seq`` assigned by the store).
    package var entry: AuditEntry
    /// The outputs that announce the change (the audit message and its copies), from the numbered row.
    package var announce: @Sendable (AuditEntry) -> [StateStore.OutboxItem]

    package init(entry: AuditEntry, announce: @escaping @Sendable (AuditEntry) -> [StateStore.OutboxItem]) {
        self.entry = entry
        self.announce = announce
    }
}

extension StateStore {
    /// SQL of the acknowledgement and audit tables (schema 6).
    static let acknowledgementsMigration = """
        CREATE TABLE acknowledgements (alert TEXT PRIMARY KEY, user TEXT NOT NULL, rule TEXT NOT NULL, team TEXT NOT NULL,
                                       by TEXT NOT NULL, at INTEGER NOT NULL, note TEXT, payload BLOB NOT NULL);
        CREATE TABLE audit (seq INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, action TEXT NOT NULL, actor TEXT NOT NULL,
                            team TEXT NOT NULL, user TEXT NOT NULL, rule TEXT NOT NULL, subject TEXT NOT NULL, note TEXT);
        """

    /// SQL of the audit trail's index by user and action (schema 8): a patient's acknowledgements
    /// are read without scanning the whole trail.
    static let auditByUserMigration = """
        CREATE INDEX audit_by_user ON audit (user, action, seq);
        """

    /// Records an acknowledgement, appends its audit row and the outputs that announce it (the
    /// retained firing message, the audit message) in one transaction; returns the audit row's
    /// sequence number and the outputs' outbox ids. Fails (nothing changed) when the instance is
    /// already acknowledged.
    package func recordAcknowledgement(
        _ a: StoredAcknowledgement, audit: AuditEntry, outbox: (AuditEntry) -> [OutboxItem]
    ) throws -> (seq: Int64, outbox: [OutboxItem]) {
        try auditedChange(audit, outbox) {
            let ins = try db.prepare(
                "INSERT INTO acknowledgements (alert, user, rule, team, by, at, note, payload) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")
            ins.bind(1, a.alert); ins.bind(2, a.user); ins.bind(3, a.rule); ins.bind(4, a.team)
            ins.bind(5, a.acknowledgement.by); ins.bind(6, a.acknowledgement.at.milliseconds)
            if let n = a.acknowledgement.note { ins.bind(7, n) }
            ins.bind(8, a.payload)
            try ins.run()
        }
    }

    /// Appends an audit row (call inside a transaction, holding `lock`); returns its sequence number.
    func append(audit e: AuditEntry) throws(SQLiteError) -> Int64 {
        let q = try db.prepare(
            "INSERT INTO audit (at, action, actor, team, user, rule, subject, note, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")
        q.bind(1, e.at.milliseconds); q.bind(2, e.action); q.bind(3, e.actor); q.bind(4, e.team)
        q.bind(5, e.user); q.bind(6, e.rule); q.bind(7, e.subject)
        if let n = e.note { q.bind(8, n) }
        if let d = e.detail { q.bind(9, d) }
        try q.run()
        return db.lastInsertRowID
    }

    /// The acknowledgements of instances still firing (as last recorded), oldest first.
    package func alertAcknowledgements() throws -> [StoredAcknowledgement] {
        try lock.withLock { _ in
            let q = try db.prepare("SELECT alert, user, rule, team, by, at, note, payload FROM acknowledgements ORDER BY at, alert")
            var out: [StoredAcknowledgement] = []
            while try q.step() {
                let ack = AlertAcknowledgement(by: q.text(4), at: Timestamp(milliseconds: q.int(5)), note: q.isNull(6) ? nil : q.text(6))
                out.append(StoredAcknowledgement(alert: q.text(0), user: q.text(1), rule: q.text(2), team: q.text(3), acknowledgement: ack, payload: q.blob(7)))
            }
            return out
        }
    }

    /// Forgets the acknowledgements of instances that resolved (the audit trail keeps them).
    package func clearAcknowledgements(_ alerts: [String]) throws {
        guard !alerts.isEmpty else { return }
        try lock.withLock { _ in
            try db.exec("BEGIN IMMEDIATE")
            do {
                let q = try db.prepare("DELETE FROM acknowledgements WHERE alert = ?1")
                for a in alerts { q.bind(1, a); try q.run() }
                try db.exec("COMMIT")
            } catch {
                try? db.exec("ROLLBACK")
                throw error
            }
        }
    }

    /// The audit trail, oldest first (at most the last `limit` rows).
    package func auditTrail(limit: Int = 10_000) throws -> [AuditEntry] {
        try auditRows(
            "SELECT seq, at, action, actor, team, user, rule, subject, note, detail FROM (SELECT * FROM audit ORDER BY seq DESC LIMIT ?1) ORDER BY seq"
        ) { $0.bind(1, Int64(limit)) }
    }

    /// `user`'s audit rows of `action`, oldest first (at most the last `limit`): a range of the
    /// `audit_by_user` index, however long the trail.
    package func auditTrail(of user: String, action: String, limit: Int) throws -> [AuditEntry] {
        try auditRows(
            "SELECT seq, at, action, actor, team, user, rule, subject, note, detail FROM "
                + "(SELECT * FROM audit WHERE user = ?1 AND action = ?2 ORDER BY seq DESC LIMIT ?3) ORDER BY seq"
        ) { q in
            q.bind(1, user); q.bind(2, action); q.bind(3, Int64(limit))
        }
    }

    private func auditRows(_ sql: String, bind: (SQLiteDatabase.Statement) -> Void) throws -> [AuditEntry] {
        try lock.withLock { _ in
            let q = try db.prepare(sql)
            bind(q)
            var out: [AuditEntry] = []
            while try q.step() {
                out.append(
                    AuditEntry(
                        seq: q.int(0), at: Timestamp(milliseconds: q.int(1)), action: q.text(2), actor: q.text(3), team: q.text(4),
                        user: q.text(5), rule: q.text(6), subject: q.text(7), note: q.isNull(8) ? nil : q.text(8),
                        detail: q.isNull(9) ? nil : q.text(9)))
            }
            return out
        }
    }
}

extension StateStore {
    /// The last firing (or reminder) payload of an alert instance the history recorded, nil
    /// without history: what an acknowledgement republishes when the daemon has not seen the
    /// instance fire since it started.
    package func firingPayload(user: String, alert: String) throws -> [UInt8]? {
        try lock.withLock { _ in
            let q = try db.prepare("SELECT payload FROM history WHERE user = ?1 AND kind = 1 AND key IN (?2, ?3) ORDER BY day DESC, key DESC LIMIT 1")
            q.bind(1, user); q.bind(2, alert + "/firing"); q.bind(3, alert + "/repeat")
            return try q.step() ? q.blob(0) : nil
        }
    }
}
