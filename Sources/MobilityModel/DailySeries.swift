/// One user-day's series values, as published on `users/{user}/series`: every series the rules
/// declare, in their order, in one message (one QoS 1 message per user-day instead of one per
/// series: at one sample a message, eight series messages per user-day cost a backfill half its
/// throughput).
///
/// ```json
/// {"user": "jamie", "day": "2026-03-05", "series": {"speed_p95": {"value": 1.31, "unit": "m/s"}, "speed_7d": {"value": null, "unit": "m/s"}}}
/// ```
package struct DailySeries: Hashable, Sendable {
    /// The user it is about.
    package var user: String
    /// The user's local day.
    package var day: CivilDate
    /// True when late data changed an already published day (every value of the day is republished).
    package var revised: Bool
    /// The values, in the rules' order: name, value in the unit (nil: the day is missing), unit.
    package var values: [(name: String, value: Double?, unit: String)]

    /// Creates a user-day's series.
    package init(user: String, day: CivilDate, revised: Bool = false, values: [(name: String, value: Double?, unit: String)] = []) {
        self.user = user
        self.day = day
        self.revised = revised
        self.values = values
    }

    /// Whether `p` belongs to this message (same user, day and revision).
    package func holds(_ p: SeriesPoint) -> Bool { p.user == user && p.day == day && p.revised == revised }

    /// The JSON payload; values rounded to 1e-6 as in a series point (the text of ``jsonBytes``,
    /// the one writer of this format).
    package var json: String { String(decoding: jsonBytes, as: UTF8.self) }

    /// Parses a payload published by mobilityd (the inverse of ``json``); nil if malformed.
    package static func parse(_ payload: [UInt8]) -> DailySeries? {
        guard case .success(let v) = JSONValue.parse(payload), case .string(let user)? = v["user"], case .string(let d)? = v["day"],
            let day = CivilDate(parsing: Substring(d)), case .object(let members)? = v["series"]
        else { return nil }
        var s = DailySeries(user: user, day: day, revised: v["revised"] == .bool(true))
        for (name, m) in members {
            guard case .string(let unit)? = m["unit"] else { return nil }
            switch m["value"] {
            case .number(let x)?: s.values.append((name, x, unit))
            case .null?: s.values.append((name, nil, unit))
            default: return nil
            }
        }
        return s
    }

    /// The values as series points (what `mobilityctl replay --series` prints, one a line).
    package var points: [SeriesPoint] {
        values.map { SeriesPoint(user: user, name: $0.name, day: day, value: $0.value, unit: $0.unit, revised: revised) }
    }

    /// Equal when user, day, revision and every value are.
    package static func == (a: DailySeries, b: DailySeries) -> Bool {
        a.user == b.user && a.day == b.day && a.revised == b.revised && a.values.count == b.values.count
            && zip(a.values, b.values).allSatisfy { $0.name == $1.name && $0.value == $1.value && $0.unit == $1.unit }
    }

    /// Hashes user, day and revision.
    package func hash(into h: inout Hasher) {
        h.combine(user)
        h.combine(day)
        h.combine(revised)
    }
}
