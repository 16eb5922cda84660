import CareReports
import HTTPEndpoint
import MobilityModel

/// The encodings and argument checks of the history JSON API (``Daemon/mountHistoryAPI(_:store:)``).
enum HistoryAPI {
    /// At most this many days a request.
    static let maxDays: DayNumber = 800

    static let rangeHelp = "from and to are local dates (2026-03-01), from <= to, at most 800 days apart"

    /// The `from`/`to` range of a request (both optional: the whole kept history).
    static func range(_ r: HTTPRequest) -> (from: DayNumber, to: DayNumber)? {
        func day(_ name: String) -> DayNumber?? {
            guard let s = r.query(name) else { return .some(nil) }
            guard let d = CivilDate(parsing: Substring(s)), d.description == s else { return nil }
            return .some(d.dayNumber)
        }
        guard let f = day("from"), let t = day("to") else { return nil }
        switch (f, t) {
        case (nil, nil): return (.min, .max)
        case (let a?, nil): return (a, a + maxDays)
        case (nil, let b?): return (b - maxDays, b)
        case (let a?, let b?): return a <= b && b - a <= maxDays ? (a, b) : nil
        }
    }

    /// Runs a store read; a failure is a 500 that names no user or value.
    static func answer(_ body: () throws -> HTTPResponse) -> HTTPResponse {
        do { return try body() } catch { return .apiError(.internal, "the state store could not be read") }
    }

    /// `{"series": {"speed_p95": {"unit": "m/s", "points": [{"day": …, "value": …}]}}}`, values in the series' unit.
    static func seriesJSON(_ h: UserHistory) -> String {
        var w = JSONWriter()
        w.beginObject()
        w.beginObject("series")
        for name in h.series.keys.sorted() {
            let unitName = h.units[name] ?? ""
            let unit = h.unit(of: name)
            w.beginObject(name)
            w.string("unit", unitName)
            w.beginArray("points")
            for (day, value) in h.series[name, default: [:]].sorted(by: { $0.key < $1.key }) {
                w.beginObject()
                w.string("day", CivilDate(dayNumber: day).description)
                if let v = value { w.number("value", UserHistory.shown(v, in: unit)) } else { w.null("value") }
                w.endObject()
            }
            w.endArray()
            w.endObject()
        }
        w.endObject()
        w.endObject()
        return w.text
    }

    /// `{"events": [{"id", "category", "kind", "first", "last", "note"?, "entered"?: {"by", "team", "at"}}]}`:
    /// the recorded timeline (days are local dates; `entered` for an entry care staff entered).
    static func timelineJSON(_ h: UserHistory) -> String {
        var w = JSONWriter()
        w.beginObject()
        w.beginArray("events")
        for e in h.timeline {
            w.beginObject()
            w.string("id", e.id)
            w.string("category", e.category.description)
            w.string("kind", e.kind)
            w.string("first", CivilDate(dayNumber: e.firstDay).description)
            w.string("last", CivilDate(dayNumber: e.lastDay).description)
            if let n = e.note { w.string("note", n) }
            if let a = e.entered {
                w.beginObject("entered")
                w.string("by", a.by)
                w.string("team", a.team)
                w.string("at", a.at.description)
                w.endObject()
            }
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.text
    }

    /// `{"alerts": [{"id", "rule", "severity", "sinceDay", "firedDay", "resolvedDay", ["expiredDay",] "headline", "details", "summary", "labels"}]}`.
    static func alertsJSON(_ h: UserHistory) -> String {
        var w = JSONWriter()
        w.beginObject()
        w.beginArray("alerts")
        for e in h.alerts {
            w.beginObject()
            w.string("id", e.id)
            w.string("rule", e.rule)
            w.string("severity", e.severity.rawValue)
            w.string("sinceDay", CivilDate(dayNumber: e.sinceDay).description)
            w.string("firedDay", CivilDate(dayNumber: e.firedDay).description)
            if let r = e.endedDay, !e.expired { w.string("resolvedDay", CivilDate(dayNumber: r).description) } else { w.null("resolvedDay") }
            if let r = e.endedDay, e.expired { w.string("expiredDay", CivilDate(dayNumber: r).description) }
            w.string("headline", e.headline)
            w.string("details", e.details)
            w.string("summary", e.headline)  // the former name of headline
            w.beginObject("labels")
            for (k, v) in e.labels.sorted(by: { $0.key < $1.key }) { w.string(k, v) }
            w.endObject()
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.text
    }
}
