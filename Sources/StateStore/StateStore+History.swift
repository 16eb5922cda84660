import CSQLite
import MobilityModel

extension StateStore {
    /// SQL of the history table (schema 5).
    ///
    /// Series points are packed a row per user-day (`history_days`: a series id and a value per
    /// point, the names in `history_series`): a day close writes one row per user instead of one
    /// per series (measured: docs/benchmarks.md "History").
    static let historyMigration = """
        CREATE TABLE history (user TEXT NOT NULL, kind INTEGER NOT NULL, key TEXT NOT NULL, day INTEGER NOT NULL, value REAL, payload BLOB NOT NULL,
                              PRIMARY KEY (user, kind, key, day)) WITHOUT ROWID;
        CREATE TABLE history_series (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, unit TEXT NOT NULL);
        CREATE TABLE history_days (user TEXT NOT NULL, day INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (user, day)) WITHOUT ROWID;
        """

    /// Writes history rows inside the commit's transaction (call only while holding the lock).
    /// Series points are merged into their user-day's packed row (a revised point replaces its
    /// series' value there); the other rows are upserted by key.
    func write(
        history rows: [HistoryRecord], upsert up: SQLiteDatabase.Statement,
        replacing del: SQLiteDatabase.Statement, insertDay: SQLiteDatabase.Statement, readDay: SQLiteDatabase.Statement,
        writeDay: SQLiteDatabase.Statement
    ) throws(SQLiteError) {
        // A user-day's points come one after another (the engine emits a day's series together):
        // grouped as they come, the map consulted only when the user-day changes; series ids from
        // a short list of this call's names before the shared cache.
        var days: [(key: UserDay, points: [(id: Int64, value: Double?)])] = []
        var index: [UserDay: Int] = [:]
        var names: [(name: String, id: Int64)] = []
        var current = -1  // the user-day of the last point (compared in place: a copy of it would copy its points on append)
        for r in rows {
            if r.kind == .series {
                let id: Int64
                if let known = names.first(where: { $0.name == r.key }) {
                    id = known.id
                } else {
                    id = try seriesID(r.key, unit: r.payload)
                    if names.count < 64 { names.append((r.key, id)) }
                }
                if current >= 0, days[current].key.day == r.day, days[current].key.user == r.user {
                    days[current].points.append((id, r.value))
                } else {
                    let key = UserDay(user: r.user, day: r.day)
                    if let k = index[key] {
                        current = k
                    } else {
                        current = days.count
                        index[key] = current
                        days.append((key, []))
                        days[current].points.reserveCapacity(16)
                    }
                    days[current].points.append((id, r.value))
                }
                continue
            }
            if r.kind == .timeline {  // an entry re-sent with other dates replaces its row; a retraction removes it
                del.bind(1, r.user)
                del.bind(2, r.key)
                try del.run()
                if r.payload.isEmpty { continue }
            }
            up.bind(1, r.user)
            up.bind(2, r.kind.rawValue)
            up.bind(3, r.key)
            up.bind(4, Int64(r.day))
            if let v = r.value { up.bind(5, double: v) }
            up.bind(6, r.payload)
            try up.run()
        }
        // A user-day's first points (a day close) are inserted in one statement; only a day the
        // store already holds (a revision) is read back and merged (its other series kept).
        for (key, points) in days {
            var packed = SeriesDay(capacity: points.count)
            for p in points { packed.set(p.id, p.value) }
            insertDay.bind(1, key.user)
            insertDay.bind(2, Int64(key.day))
            insertDay.bind(3, packed.bytes)
            try insertDay.run()
            if db.changes == 1 { continue }
            readDay.bind(1, key.user)
            readDay.bind(2, Int64(key.day))
            packed = SeriesDay(capacity: points.count)
            if try readDay.step() { readDay.withBlob(0) { packed = SeriesDay(trusted: $0) } }
            readDay.reset()
            for p in points { packed.set(p.id, p.value) }
            writeDay.bind(1, key.user)
            writeDay.bind(2, Int64(key.day))
            writeDay.bind(3, packed.bytes)
            try writeDay.run()
        }
    }

    /// The id of a series name in `history_series`, created on first use (call under the lock).
    /// The unit (UTF-8, as a series row holds it) is decoded only for a name not seen yet.
    private func seriesID(_ name: String, unit: [UInt8]) throws(SQLiteError) -> Int64 {
        if let id = seriesIDs.withLock({ $0.ids[name] }) { return id }
        let q = try db.prepare("INSERT INTO history_series (name, unit) VALUES (?1, ?2) ON CONFLICT(name) DO UPDATE SET unit = ?2 RETURNING id")
        q.bind(1, name)
        q.bind(2, String(decoding: unit, as: UTF8.self))
        guard try q.step() else { throw SQLiteError(code: -1, message: "history_series: no id for a series") }
        let id = q.int(0)
        q.reset()
        seriesIDs.withLock { $0.ids[name] = id }
        return id
    }

    /// The user's history from `from` through `through` (series, alerts), with the whole timeline.
    /// Series values are in SI units (``UserHistory``); the store keeps them as published.
    /// Alert episodes that fired before `from` and resolved inside the range (or are still active)
    /// are included: an episode is read from its first row on.
    package func history(of user: String, from: DayNumber, through: DayNumber) throws -> UserHistory {
        var h = UserHistory(user: user)
        var alertRows: [(day: DayNumber, key: String, payload: [UInt8])] = []
        var timeline: [TimelineEvent] = []
        try reading { db in
            let d = try db.prepare("SELECT day, data FROM history_days WHERE user = ?1 AND day >= ?2 AND day <= ?3 ORDER BY day")
            d.bind(1, user)
            d.bind(2, Int64(from))
            d.bind(3, Int64(through))
            // Gathered by series in day order (a series id is a small integer: a slot in an array,
            // not a map lookup a point), then each series' map built once at its size: growing a map
            // per series point by point was most of a weekly digest's read.
            var slots = SeriesSlots()
            while try d.step() {
                let day = DayNumber(truncatingIfNeeded: d.int(0))
                let valid = d.withBlob(1) { SeriesDay.visit($0) { id, value in slots.append(id, day, value) } }
                guard valid else {
                    throw HistoryDecodingError(description: "history of user #\(StateStore.fingerprint(user)): unreadable series row of day \(day)")
                }
            }
            for (id, points) in zip(slots.ids, slots.points) {
                guard let s = try db.series(id) else {
                    throw HistoryDecodingError(description: "history of user #\(StateStore.fingerprint(user)): unknown series id \(id)")
                }
                // As UserHistory.record converts a published point: to SI from the series' unit.
                let toSI = (MeasureUnit.rule(s.unit) ?? .one).toSI
                var days = [DayNumber: Double?](minimumCapacity: points.count)
                for p in points { days[p.day] = .some(toSI == 1 ? p.value : p.value.map { $0 * toSI }) }
                h.series[s.name] = days
                h.units[s.name] = s.unit
            }
            let q = try db.prepare("SELECT kind, key, day, value, payload FROM history WHERE user = ?1 AND kind IN (1, 2) AND day <= ?2 ORDER BY kind, day")
            q.bind(1, user)
            q.bind(2, Int64(through))
            while try q.step() {
                let day = DayNumber(truncatingIfNeeded: q.int(2))
                switch q.int(0) {
                case HistoryRecord.Kind.alert.rawValue:
                    guard day <= through else { continue }
                    alertRows.append((day, q.text(1), q.blob(4)))
                default:
                    guard let e = HistoryRecord.timelineEntry(q.blob(4)) else {
                        throw HistoryDecodingError(description: "history of user #\(StateStore.fingerprint(user)): unreadable timeline row \(q.text(1))")
                    }
                    timeline.append(e)
                }
            }
        }
        return try StateStore.assembleHistory(h, from: from, alertRows: alertRows, timeline: timeline)
    }

    /// Completes a user's history (its series already in `h`) from its alert rows (day, key,
    /// transition JSON) and timeline entries, as every backend reads them: transitions in
    /// publication order, episodes over before `from` left out.
    package static func assembleHistory(
        _ history: UserHistory, from: DayNumber, alertRows: [(day: DayNumber, key: String, payload: [UInt8])], timeline: [TimelineEvent]
    ) throws -> UserHistory {
        var h = history, alertRows = alertRows
        let user = h.user
        // Transitions in publication order: by day, a firing before its reminders and its end,
        // and a revision's (a withdrawal, a firing again) after them.
        func rank(_ key: String) -> Int {
            key.hasSuffix("/firing") ? 0 : key.hasSuffix("/repeat") ? 1 : key.hasSuffix("/withdrawn") || key.hasSuffix("/reopened") ? 3 : 2
        }
        alertRows.sort { ($0.day, rank($0.key)) < ($1.day, rank($1.key)) }
        var episodes: [String: (fired: DayNumber, ended: DayNumber?)] = [:]
        var transitions: [AlertTransition] = []
        for r in alertRows {
            guard let a = AlertTransition.parse(r.payload) else {
                throw HistoryDecodingError(description: "history of user #\(StateStore.fingerprint(user)): unreadable alert row \(r.key)")
            }
            transitions.append(a)
            var e = episodes[a.id] ?? (r.day, nil)
            if a.status.isEnded { e.ended = r.day } else if !a.isRepeat { e.ended = nil }
            episodes[a.id] = e
        }
        for a in transitions {
            guard let e = episodes[a.id] else { continue }
            if let r = e.ended, r < from { continue }  // over before the range
            h.record(a)
        }
        for e in timeline { h.record(e) }
        return h
    }

    /// The weekly report of `week` (`2026-W10`), or the latest one when nil: the digest's JSON.
    package func weeklyReport(of user: String, week: String? = nil) throws -> (week: String, payload: [UInt8])? {
        var found: (String, [UInt8])?
        try reading { db in
            let q =
                week == nil
                ? try db.prepare("SELECT key, payload FROM history WHERE user = ?1 AND kind = 3 AND length(payload) > 0 ORDER BY day DESC LIMIT 1")
                : try db.prepare("SELECT key, payload FROM history WHERE user = ?1 AND kind = 3 AND key = ?2 AND length(payload) > 0")
            q.bind(1, user)
            if let week { q.bind(2, week) }
            if try q.step() { found = (q.text(0), q.blob(1)) }
        }
        return found
    }

    /// Weekly rows still due (written as markers, not yet built): `(user, week)`, oldest first.
    package func dueReports() throws -> [(user: String, week: String)] {
        var due: [(String, String)] = []
        try reading { db in
            let q = try db.prepare("SELECT user, key FROM history WHERE kind = 3 AND length(payload) = 0 ORDER BY day, user")
            while try q.step() { due.append((q.text(0), q.text(1))) }
        }
        return due
    }

    /// The weeks the user has reports for, newest first.
    package func reportWeeks(of user: String) throws -> [String] {
        var weeks: [String] = []
        try reading { db in
            let q = try db.prepare("SELECT key FROM history WHERE user = ?1 AND kind = 3 AND length(payload) > 0 ORDER BY day DESC")
            q.bind(1, user)
            while try q.step() { weeks.append(q.text(0)) }
        }
        return weeks
    }

    /// Deletes the user's series, alert and timeline rows before `keepFrom` (timeline entries
    /// that end before it) and weekly reports before `reportsFrom`. Returns the rows deleted.
    @discardableResult
    package func pruneHistory(of user: String, keepFrom: DayNumber, reportsFrom: DayNumber) throws -> Int {
        try pruneHistory([(user: user, keepFrom: keepFrom, reportsFrom: reportsFrom)])
    }

    /// ``pruneHistory(of:keepFrom:reportsFrom:)`` for several users in one transaction.
    @discardableResult
    package func pruneHistory(_ users: [HistoryPrune]) throws -> Int {
        guard !users.isEmpty else { return 0 }
        return try lockedWrite { db in
            try StateStore.prune(users, rows: try db.prepare(StateStore.pruneRowsSQL), days: try db.prepare(StateStore.pruneDaysSQL), changes: { db.changes })
        }
    }

    /// Deletes a user's alert and timeline rows before its `keepFrom` and weekly rows before its `reportsFrom`.
    static let pruneRowsSQL = "DELETE FROM history WHERE user = ?1 AND ((kind IN (1, 2) AND day < ?2) OR (kind = 3 AND day < ?3))"
    /// Deletes a user's series rows before its `keepFrom`.
    static let pruneDaysSQL = "DELETE FROM history_days WHERE user = ?1 AND day < ?2"

    /// Runs the prune statements for each user (inside the caller's transaction); returns the rows deleted.
    static func prune(
        _ users: [HistoryPrune], rows q: SQLiteDatabase.Statement, days d: SQLiteDatabase.Statement, changes: () -> Int32
    ) throws(SQLiteError) -> Int {
        var deleted = 0
        for u in users {
            q.bind(1, u.user)
            q.bind(2, Int64(u.keepFrom))
            q.bind(3, Int64(u.reportsFrom))
            try q.run()
            deleted += Int(changes())
            d.bind(1, u.user)
            d.bind(2, Int64(u.keepFrom))
            try d.run()
            deleted += Int(changes())
        }
        return deleted
    }

    /// Every user with history, sorted.
    package func historyUsers() throws -> [String] {
        var users: [String] = []
        try reading { db in
            let q = try db.prepare("SELECT user FROM history UNION SELECT user FROM history_days ORDER BY user")
            while try q.step() { users.append(q.text(0)) }
        }
        return users
    }
}

/// What a weekly report prunes of its user's history: series, alert and timeline rows before
/// `keepFrom`, weekly reports before `reportsFrom`.
package typealias HistoryPrune = (user: String, keepFrom: DayNumber, reportsFrom: DayNumber)
