import MobilityModel
import StateStore

extension PostgresStore {
    /// The user's history from `from` through `through` (series in SI units, alert episodes),
    /// with the whole timeline; read on the reading connection. Series points are rows of their
    /// own here (`history_points`, upserted in a batch), not SQLite's packed user-days, which a
    /// commit would have to read before writing.
    package func history(of user: String, from: DayNumber, through: DayNumber) throws -> UserHistory {
        var range = PGParameters()
        range.text(user)
        range.int32(from)
        range.int32(through)
        var upTo = PGParameters()
        upTo.text(user)
        upTo.int32(through)
        var h = UserHistory(user: user)
        var alertRows: [(day: DayNumber, key: String, payload: [UInt8])] = []
        var timeline: [TimelineEvent] = []
        try reading { c in
            let p = try c.query(
                """
                SELECT p.series, s.unit, p.day, p.value FROM history_points p JOIN history_series s ON s.name = p.series
                WHERE p.user_id = $1::text AND p.day >= $2::integer AND p.day <= $3::integer ORDER BY p.series, p.day
                """, range)
            var k = 0
            while k < p.rows {
                let name = p.text(k, 0), unit = p.text(k, 1)
                let toSI = (MeasureUnit.rule(unit) ?? .one).toSI
                var days: [DayNumber: Double?] = [:]
                while k < p.rows, p.text(k, 0) == name {
                    days[p.int32(k, 2)] = .some(p.isNull(k, 3) ? nil : p.double(k, 3) * toSI)
                    k += 1
                }
                h.series[name] = days
                h.units[name] = unit
            }
            let q = try c.query(
                "SELECT kind, key, day, payload FROM history WHERE user_id = $1::text AND kind IN (1, 2) AND day <= $2::integer ORDER BY kind, day", upTo)
            for k in 0..<q.rows {
                let day = q.int32(k, 2)
                if q.int32(k, 0) == Int32(HistoryRecord.Kind.alert.rawValue) {
                    alertRows.append((day, q.text(k, 1), q.bytes(k, 3)))
                } else {
                    guard let e = HistoryRecord.timelineEntry(q.bytes(k, 3)) else {
                        throw HistoryDecodingError("history of user #\(StateStore.fingerprint(user)): unreadable timeline row \(q.text(k, 1))")
                    }
                    timeline.append(e)
                }
            }
        }
        return try StateStore.assembleHistory(h, from: from, alertRows: alertRows, timeline: timeline)
    }

    /// The weekly report of `week`, or the latest one when nil: the digest's JSON.
    package func weeklyReport(of user: String, week: String?) throws -> (week: String, payload: [UInt8])? {
        var p = PGParameters()
        p.text(user)
        if let week { p.text(week) }
        return try reading { c in
            let r =
                week == nil
                ? try c.query(
                    "SELECT key, payload FROM history WHERE user_id = $1::text AND kind = 3 AND length(payload) > 0 ORDER BY day DESC LIMIT 1", p)
                : try c.query("SELECT key, payload FROM history WHERE user_id = $1::text AND kind = 3 AND key = $2::text AND length(payload) > 0", p)
            return r.rows > 0 ? (r.text(0, 0), r.bytes(0, 1)) : nil
        }
    }

    /// The weeks the user has reports for, newest first.
    package func reportWeeks(of user: String) throws -> [String] {
        var p = PGParameters()
        p.text(user)
        return try reading { c in
            let r = try c.query("SELECT key FROM history WHERE user_id = $1::text AND kind = 3 AND length(payload) > 0 ORDER BY day DESC", p)
            return (0..<r.rows).map { r.text($0, 0) }
        }
    }

    /// Weekly rows still due (markers not yet built), oldest first.
    package func dueReports() throws -> [(user: String, week: String)] {
        try reading { c in
            let r = try c.query("SELECT user_id, key FROM history WHERE kind = 3 AND length(payload) = 0 ORDER BY day, user_id")
            return (0..<r.rows).map { (r.text($0, 0), r.text($0, 1)) }
        }
    }

    /// Deletes history before each user's `keepFrom` and reports before `reportsFrom` in one
    /// fenced transaction; returns the rows deleted.
    @discardableResult
    package func pruneHistory(_ users: [(user: String, keepFrom: DayNumber, reportsFrom: DayNumber)]) throws -> Int {
        guard !users.isEmpty else { return 0 }
        var ids = PGArray(of: PGArray.text), keep = PGArray(of: PGArray.int4), reports = PGArray(of: PGArray.int4)
        for u in users {
            ids.append(u.user)
            keep.append(u.keepFrom)
            reports.append(u.reportsFrom)
        }
        var rows = PGParameters()
        rows.array(ids)
        rows.array(keep)
        rows.array(reports)
        var points = PGParameters()
        points.array(ids)
        points.array(keep)
        let r = try fenced([
            (
                """
                DELETE FROM history h USING unnest($1::text[], $2::integer[], $3::integer[]) AS x(u, keep, reports)
                WHERE h.user_id = x.u AND ((h.kind IN (1, 2) AND h.day < x.keep) OR (h.kind = 3 AND h.day < x.reports))
                """, rows
            ),
            ("DELETE FROM history_points p USING unnest($1::text[], $2::integer[]) AS x(u, keep) WHERE p.user_id = x.u AND p.day < x.keep", points)
        ])
        return r.reduce(0) { $0 + $1.affected }
    }

    /// The last firing (or reminder) payload of an alert instance the history recorded.
    package func firingPayload(user: String, alert: String) throws -> [UInt8]? {
        var p = PGParameters()
        p.text(user)
        p.text(alert + "/firing")
        p.text(alert + "/repeat")
        return try reading { c in
            let r = try c.query(
                "SELECT payload FROM history WHERE user_id = $1::text AND kind = 1 AND key IN ($2::text, $3::text) ORDER BY day DESC, key DESC LIMIT 1", p)
            return r.rows > 0 ? r.bytes(0, 0) : nil
        }
    }
}
