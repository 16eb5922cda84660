import MobilityModel

/// The digest's JSON payload, as published on `{root}/users/{u}/reports/weekly` and kept in the
/// store (docs/mqtt-api.md). Numbers are rounded to 6 decimals like series values; unknown
/// values are `null`; days are `YYYY-MM-DD` local dates.
extension WeeklyDigest {
    /// The payload (deterministic member order).
    package var json: String { String(decoding: jsonBytes, as: UTF8.self) }

    /// The payload as UTF-8, as published and stored (no `String` in between).
    package var jsonBytes: [UInt8] {
        var w = JSONWriter()
        func num(_ k: String, _ v: Double?) { if let v { w.number(k, (v * 1e6).rounded() / 1e6) } else { w.null(k) } }
        func day(_ k: String, _ d: DayNumber) { w.string(k, CivilDate(dayNumber: d).description) }
        func unit(_ u: DisplayUnit) { w.string("unit", u.symbol); w.number("factor", u.factor) }
        w.beginObject()
        w.string("user", user)
        w.string("week", week.description)
        day("firstDay", firstDay)
        day("lastDay", lastDay)
        w.beginArray("metrics")
        for m in metrics {
            w.beginObject()
            w.string("title", m.title)
            w.string("series", m.series)
            unit(m.unit)
            w.bool("lowerIsBetter", m.lowerIsBetter)
            for (k, f) in [("thisWeek", m.thisWeek), ("lastWeek", m.lastWeek)] {
                w.beginObject(k)
                num("dailyMean", f.dailyMean)
                num("smoothedLast", f.smoothedLast)
                w.int("daysWithData", Int64(f.daysWithData))
                w.int("daysWithoutData", Int64(f.daysWithoutData))
                w.endObject()
            }
            num("baseline", m.baseline)
            num("trendPerWeek", m.trendPerWeek)
            w.endObject()
        }
        w.endArray()
        if let s = sixMinuteWalk {
            w.beginObject("sixMinuteWalk")
            unit(s.unit)
            for (k, list) in [("clinic", s.clinic), ("watch", s.watch)] {
                w.beginArray(k)
                for v in list {
                    w.beginObject()
                    day("day", v.day)
                    num("value", v.value)
                    w.bool("provisional", v.provisional)
                    w.endObject()
                }
                w.endArray()
            }
            w.endObject()
        } else {
            w.null("sixMinuteWalk")
        }
        w.beginArray("conditions")
        for c in conditions {
            w.beginObject()
            w.string("group", c.group)
            w.string("label", c.label)
            w.int("count", Int64(c.count))
            num("share", c.share)
            w.endObject()
        }
        w.endArray()
        w.beginArray("alerts")
        for a in alerts {
            let e = a.episode
            w.beginObject()
            w.string("state", a.state.rawValue)
            w.string("id", e.id)
            w.string("rule", e.rule)
            w.string("severity", e.severity.rawValue)
            day("sinceDay", e.sinceDay)
            day("firedDay", e.firedDay)
            // An expired episode has no resolvedDay: it ended without getting better.
            if let r = e.endedDay, !e.expired { day("resolvedDay", r) } else { w.null("resolvedDay") }
            if let r = e.endedDay, e.expired { day("expiredDay", r) }
            if let r = e.withdrawnDay { day("withdrawnDay", r) }
            w.string("headline", e.headline)
            w.string("details", e.details)
            if let f = e.firedHeadline { w.string("firedHeadline", f) } else { w.null("firedHeadline") }
            // The former names of headline and firedHeadline, for readers written before them.
            w.string("summary", e.headline)
            if let f = e.firedHeadline { w.string("firedSummary", f) } else { w.null("firedSummary") }
            w.beginObject("labels")
            for (k, v) in e.labels.sorted(by: { $0.key < $1.key }) { w.string(k, v) }
            w.endObject()
            w.endObject()
        }
        w.endArray()
        w.beginArray("annotations")
        for t in annotations {
            w.beginObject()
            w.string("id", t.id)
            w.string("category", t.category.description)
            w.string("kind", t.kind)
            day("firstDay", t.firstDay)
            day("lastDay", t.lastDay)
            if let n = t.note { w.string("note", n) } else { w.null("note") }
            w.endObject()
        }
        w.endArray()
        w.beginArray("explanations")
        for s in explanations { w.string(nil, s) }
        w.endArray()
        w.endObject()
        return w.bytes
    }

    /// Decodes a payload strictly: every member present with its type, no unknown member, days
    /// and weeks valid. The error names the member (`metrics[0].thisWeek.daysWithData`).
    package static func decode(_ bytes: [UInt8]) -> Result<WeeklyDigest, DigestDecodingError> {
        guard case .success(let v) = JSONValue.parse(bytes) else { return .failure(DigestDecodingError(path: "", message: "not JSON")) }
        do { return .success(try DigestReader.digest(v)) } catch let e as DigestDecodingError { return .failure(e) } catch { fatalError("unreachable") }
    }
}

/// Why a digest payload was refused.
package struct DigestDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The member, e.g. `metrics[0].baseline` (empty: the payload).
    package var path: String
    /// What is wrong with it.
    package var message: String
    /// The member path and the problem.
    package var description: String { path.isEmpty ? message : "\(path): \(message)" }
}

/// Reads one JSON object, checking that every member is read and none is unknown.
struct DigestReader {
    let members: [(String, JSONValue)]
    let path: String

    init(_ v: JSONValue, _ path: String) throws {
        guard case .object(let m) = v else { throw DigestDecodingError(path: path, message: "expected an object") }
        var seen: Set<String> = []
        for (k, _) in m where !seen.insert(k).inserted { throw DigestDecodingError(path: path, message: "duplicate member '\(k)'") }
        members = m
        self.path = path
    }

    func sub(_ k: String) -> String { path.isEmpty ? k : path + "." + k }
    func fail(_ k: String, _ m: String) -> DigestDecodingError { DigestDecodingError(path: sub(k), message: m) }

    /// Checks the object has exactly these members.
    func only(_ keys: Set<String>) throws {
        for (k, _) in members where !keys.contains(k) { throw DigestDecodingError(path: path, message: "unknown member '\(k)'") }
    }

    /// Whether the object has member `k` (an optional member added after the first version).
    func has(_ k: String) -> Bool { members.contains { $0.0 == k } }

    func value(_ k: String) throws -> JSONValue {
        guard let v = members.first(where: { $0.0 == k })?.1 else { throw fail(k, "missing") }
        return v
    }
    func string(_ k: String) throws -> String {
        guard case .string(let s) = try value(k) else { throw fail(k, "expected a string") }
        return s
    }
    func optionalString(_ k: String) throws -> String? {
        let v = try value(k)
        if v == .null { return nil }
        guard case .string(let s) = v else { throw fail(k, "expected a string or null") }
        return s
    }
    func number(_ k: String) throws -> Double {
        guard case .number(let n) = try value(k), n.isFinite else { throw fail(k, "expected a number") }
        return n
    }
    func optionalNumber(_ k: String) throws -> Double? {
        let v = try value(k)
        if v == .null { return nil }
        guard case .number(let n) = v, n.isFinite else { throw fail(k, "expected a number or null") }
        return n
    }
    func int(_ k: String, _ range: ClosedRange<Int>) throws -> Int {
        let n = try number(k)
        guard n == n.rounded(), n >= Double(range.lowerBound), n <= Double(range.upperBound) else {
            throw fail(k, "expected a whole number in \(range.lowerBound)...\(range.upperBound)")
        }
        return Int(n)
    }
    func bool(_ k: String) throws -> Bool {
        guard case .bool(let b) = try value(k) else { throw fail(k, "expected true or false") }
        return b
    }
    func day(_ k: String) throws -> DayNumber {
        guard let d = CivilDate(parsing: Substring(try string(k))) else { throw fail(k, "expected a date YYYY-MM-DD") }
        return d.dayNumber
    }
    func optionalDay(_ k: String) throws -> DayNumber? {
        guard let s = try optionalString(k) else { return nil }
        guard let d = CivilDate(parsing: Substring(s)) else { throw fail(k, "expected a date YYYY-MM-DD or null") }
        return d.dayNumber
    }
    func objects(_ k: String) throws -> [DigestReader] {
        guard case .array(let a) = try value(k) else { throw fail(k, "expected an array") }
        return try a.enumerated().map { try DigestReader($1, sub(k) + "[\($0)]") }
    }
    func object(_ k: String) throws -> DigestReader { try DigestReader(try value(k), sub(k)) }
    func unit() throws -> DisplayUnit {
        let f = try number("factor")
        guard f > 0 else { throw fail("factor", "expected a positive number") }
        return DisplayUnit(symbol: try string("unit"), factor: f)
    }

    static func digest(_ v: JSONValue) throws -> WeeklyDigest {
        let r = try DigestReader(v, "")
        try r.only(["user", "week", "firstDay", "lastDay", "metrics", "sixMinuteWalk", "conditions", "alerts", "annotations", "explanations"])
        guard let week = ISOWeek(parsing: try r.string("week")) else { throw r.fail("week", "expected an ISO week such as 2026-W10") }
        let first = try r.day("firstDay"), last = try r.day("lastDay")
        guard first == week.monday, last == week.sunday else { throw r.fail("firstDay", "the week \(week) runs from its Monday to its Sunday") }
        var d = WeeklyDigest(user: try r.string("user"), week: week, firstDay: first, lastDay: last)
        d.metrics = try r.objects("metrics").map { m in
            try m.only(["title", "series", "unit", "factor", "lowerIsBetter", "thisWeek", "lastWeek", "baseline", "trendPerWeek"])
            func figures(_ k: String) throws -> WeeklyDigest.WeekFigures {
                let f = try m.object(k)
                try f.only(["dailyMean", "smoothedLast", "daysWithData", "daysWithoutData"])
                let with = try f.int("daysWithData", 0...7), without = try f.int("daysWithoutData", 0...7)
                guard with + without == 7 else { throw f.fail("daysWithoutData", "days with and without data must add up to 7") }
                return .init(
                    dailyMean: try f.optionalNumber("dailyMean"), smoothedLast: try f.optionalNumber("smoothedLast"),
                    daysWithData: with, daysWithoutData: without)
            }
            return .init(
                title: try m.string("title"), series: try m.string("series"), unit: try m.unit(), thisWeek: try figures("thisWeek"),
                lastWeek: try figures("lastWeek"), baseline: try m.optionalNumber("baseline"), trendPerWeek: try m.optionalNumber("trendPerWeek"),
                lowerIsBetter: try m.bool("lowerIsBetter"))
        }
        if try r.value("sixMinuteWalk") != .null {
            let s = try r.object("sixMinuteWalk")
            try s.only(["unit", "factor", "clinic", "watch"])
            func values(_ k: String) throws -> [WeeklyDigest.DayValue] {
                try s.objects(k).map { v in
                    try v.only(["day", "value", "provisional"])
                    return .init(day: try v.day("day"), value: try v.number("value"), provisional: try v.bool("provisional"))
                }
            }
            d.sixMinuteWalk = .init(unit: try s.unit(), clinic: try values("clinic"), watch: try values("watch"))
        }
        d.conditions = try r.objects("conditions").map { c in
            try c.only(["group", "label", "count", "share"])
            return .init(
                group: try c.string("group"), label: try c.string("label"), count: try c.int("count", 0...Int(Int32.max)),
                share: try c.number("share"))
        }
        d.alerts = try r.objects("alerts").map { a in
            try a.only([
                "state", "id", "rule", "severity", "sinceDay", "firedDay", "resolvedDay", "expiredDay", "withdrawnDay", "headline", "details",
                "firedHeadline",
                "summary", "firedSummary", "labels"
            ])
            guard let state = WeeklyDigest.AlertInWeek.State(rawValue: try a.string("state")) else {
                throw a.fail("state", "expected fired, active, resolved, expired or withdrawn")
            }
            let expiredDay = a.has("expiredDay") ? try a.optionalDay("expiredDay") : nil
            guard let severity = Severity(rawValue: try a.string("severity")) else { throw a.fail("severity", "expected info, warning or critical") }
            let l = try a.object("labels")
            var labels: [String: String] = [:]
            for (k, v) in l.members {
                guard case .string(let s) = v else { throw l.fail(k, "expected a string") }
                labels[k] = s
            }
            // Reports stored before headlines existed have only `summary` and `firedSummary`.
            let current = a.has("headline")
            var e = AlertEpisode(
                id: try a.string("id"), rule: try a.string("rule"), severity: severity, sinceDay: a.has("sinceDay") ? try a.day("sinceDay") : nil,
                firedDay: try a.day("firedDay"), endedDay: try expiredDay ?? a.optionalDay("resolvedDay"),
                headline: try a.string(current ? "headline" : "summary"), details: a.has("details") ? try a.string("details") : "", labels: labels,
                firedHeadline: try a.optionalString(current ? "firedHeadline" : "firedSummary"), expired: expiredDay != nil)
            if a.has("withdrawnDay") { e.withdrawnDay = try a.optionalDay("withdrawnDay") }
            return .init(episode: e, state: state)
        }
        d.annotations = try r.objects("annotations").map { t in
            try t.only(["id", "category", "kind", "firstDay", "lastDay", "note"])
            let category: EventCategory
            switch try t.string("category") {
            case "clinical": category = .clinical
            case "annotation": category = .annotation
            default: throw t.fail("category", "expected clinical or annotation")
            }
            return TimelineEvent(
                id: try t.string("id"), category: category, kind: try t.string("kind"), firstDay: try t.day("firstDay"),
                lastDay: try t.day("lastDay"), note: try t.optionalString("note"))
        }
        guard case .array(let ex) = try r.value("explanations") else { throw r.fail("explanations", "expected an array") }
        d.explanations = try ex.enumerated().map { i, x in
            guard case .string(let s) = x else { throw r.fail("explanations[\(i)]", "expected a string") }
            return s
        }
        return d
    }
}
