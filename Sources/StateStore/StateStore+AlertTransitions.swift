import MobilityModel

extension StateStore {
    /// The user's recorded alert transitions (firings, reminders, resolutions) of days through
    /// `through`, whole, in publication order: by day, a firing before its reminders and its
    /// resolution. What `mobilityctl fhir export` maps to Flags (the episodes of ``history(of:from:through:)``
    /// keep no evidence). An unreadable row is an error naming it, never skipped.
    package func alertTransitions(of user: String, through: DayNumber) throws -> [AlertTransition] {
        var rows: [(day: DayNumber, key: String, payload: [UInt8])] = []
        try reading { db in
            let q = try db.prepare("SELECT key, day, payload FROM history WHERE user = ?1 AND kind = 1 AND day <= ?2 ORDER BY day")
            q.bind(1, user)
            q.bind(2, Int64(through))
            while try q.step() { rows.append((DayNumber(truncatingIfNeeded: q.int(1)), q.text(0), q.blob(2))) }
        }
        func rank(_ key: String) -> Int { key.hasSuffix("/firing") ? 0 : key.hasSuffix("/repeat") ? 1 : 2 }
        rows.sort { ($0.day, rank($0.key)) < ($1.day, rank($1.key)) }
        return try rows.map { r in
            guard let a = AlertTransition.parse(r.payload) else {
                throw HistoryDecodingError(description: "history of user #\(StateStore.fingerprint(user)): unreadable alert row \(r.key)")
            }
            return a
        }
    }
}
