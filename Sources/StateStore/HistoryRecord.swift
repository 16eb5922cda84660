import CSQLite
import MobilityModel

/// One row of a user's history: what the care-team reports are built from. Written in the same
/// transaction as the state and outputs that produced it (``StateStore/commit(users:outbox:acknowledged:history:)``).
package struct HistoryRecord: Sendable, Equatable {
    /// What a row holds.
    package enum Kind: Int64, Sendable {
        /// A series point: `key` the series, `value` its value (nil: missing), `payload` its unit.
        case series = 0
        /// An alert transition: `key` the instance id and status, `payload` the transition's JSON.
        case alert = 1
        /// A timeline entry: `key` its id, `day` its last day, `payload` its JSON (re-sending an id
        /// replaces its row; an empty payload, ``HistoryRecord/retracted(user:id:)``, removes it).
        case timeline = 2
        /// A weekly report: `key` the week (`2026-W10`), `day` its Monday, `payload` the digest's JSON.
        case weekly = 3
    }

    /// The user.
    package var user: String
    /// The kind.
    package var kind: Kind
    /// The key within the kind.
    package var key: String
    /// The local day it belongs to.
    package var day: DayNumber
    /// A series value.
    package var value: Double?
    /// The row's bytes.
    package var payload: [UInt8]

    package init(user: String, kind: Kind, key: String, day: DayNumber, value: Double? = nil, payload: [UInt8] = []) {
        self.user = user
        self.kind = kind
        self.key = key
        self.day = day
        self.value = value
        self.payload = payload
    }

    /// The row of a series point (a revised day replaces the earlier row).
    package static func series(_ p: SeriesPoint) -> HistoryRecord {
        HistoryRecord(user: p.user, kind: .series, key: p.name, day: p.day.dayNumber, value: p.value, payload: Array(p.unit.utf8))
    }

    /// The row of an alert transition. A withdrawal has a row of its own: an episode that had
    /// resolved keeps its resolution beside it. So has a firing published again after its day
    /// (a revision found the alert goes on after its end, or supports it again): the first
    /// firing's row stays.
    package static func alert(_ a: AlertTransition) -> HistoryRecord {
        let firing = a.isRepeat ? "/repeat" : a.day == a.firedDay ? "/firing" : "/reopened"
        let kind = a.status == .firing ? firing : a.isWithdrawal ? "/withdrawn" : "/" + a.status.rawValue
        return HistoryRecord(user: a.user, kind: .alert, key: a.id + kind, day: a.day.dayNumber, payload: Array(a.json.utf8))
    }

    /// The row of a timeline entry.
    package static func timeline(user: String, _ e: TimelineEvent) -> HistoryRecord {
        var w = JSONWriter()
        w.beginObject()
        w.string("id", e.id)
        w.string("category", e.category.description)
        w.string("kind", e.kind)
        w.number("firstDay", Double(e.firstDay))
        w.number("lastDay", Double(e.lastDay))
        if let n = e.note { w.string("note", n) }
        if let a = e.entered {
            w.beginObject("entered")
            w.string("by", a.by)
            w.string("team", a.team)
            w.string("at", a.at.description)
            w.endObject()
        }
        w.endObject()
        return HistoryRecord(user: user, kind: .timeline, key: e.id, day: e.lastDay, payload: Array(w.text.utf8))
    }

    /// The row that removes a retracted timeline entry's row (no payload).
    package static func retracted(user: String, id: String) -> HistoryRecord {
        HistoryRecord(user: user, kind: .timeline, key: id, day: 0, payload: [])
    }

    /// Decodes a timeline row's payload; nil if malformed.
    package static func timelineEntry(_ payload: [UInt8]) -> TimelineEvent? {
        guard case .success(let v) = JSONValue.parse(payload), case .string(let id)? = v["id"], case .string(let c)? = v["category"],
            case .string(let kind)? = v["kind"], case .number(let f)? = v["firstDay"], case .number(let l)? = v["lastDay"],
            let category: EventCategory = c == "clinical" ? .clinical : c == "annotation" ? .annotation : nil,
            let first = DayNumber(exactly: f), let last = DayNumber(exactly: l)
        else { return nil }
        var note: String?
        if case .string(let n)? = v["note"] { note = n }
        var entered: EntryAttribution?
        if let a = v["entered"] {
            guard case .string(let by)? = a["by"], case .string(let team)? = a["team"], case .string(let at)? = a["at"],
                let time = ISO8601.parse(at)?.0
            else { return nil }
            entered = EntryAttribution(by: by, team: team, at: time)
        }
        return TimelineEvent(id: id, category: category, kind: kind, firstDay: first, lastDay: last, note: note, entered: entered)
    }
}

/// A history row the store cannot read back: an error naming the user and the row, never a guess.
package struct HistoryDecodingError: Error, CustomStringConvertible, Sendable {
    /// What is wrong.
    package var description: String
}

extension HistoryDecodingError {
    /// An error saying what is wrong (for the other backends).
    package init(_ description: String) { self.description = description }
}
