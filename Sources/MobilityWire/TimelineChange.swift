import MobilityModel

/// One item of an `events` payload (`docs/mqtt-api.md`): an entry to record (a new one, or one
/// replacing the entry with its id: a correction), or the retraction of the entry with an id,
/// `{"id": "inj-1", "retracted": true}`.
package enum TimelineChange: Hashable, Sendable {
    /// Record the entry, replacing one with the same id.
    case record(TimelineEvent)
    /// Remove the entry with this id.
    case retract(id: String)

    /// The id of the entry it is about.
    package var id: String {
        switch self {
        case .record(let e): e.id
        case .retract(let id): id
        }
    }

    /// Writes the item as the wire carries it: the entry (`date` for one day, `start`/`end` for a
    /// range; `category` always written, so that a kind the rules declare keeps its category), or
    /// the retraction. An attribution is never written: it is the daemon's to give. With `key`,
    /// as that member of the object being written.
    package func write(into w: inout JSONWriter, key: String? = nil) {
        w.beginObject(key)
        switch self {
        case .retract(let id):
            w.string("id", id)
            w.bool("retracted", true)
        case .record(let e):
            w.string("id", e.id)
            w.string("kind", e.kind)
            w.string("category", e.category.description)
            if e.firstDay == e.lastDay {
                w.string("date", CivilDate(dayNumber: e.firstDay).description)
            } else {
                w.string("start", CivilDate(dayNumber: e.firstDay).description)
                w.string("end", CivilDate(dayNumber: e.lastDay).description)
            }
            if let n = e.note { w.string("note", n) }
        }
        w.endObject()
    }

    /// The item's JSON as a one-item `events` payload.
    package var payload: [UInt8] {
        var w = JSONWriter()
        write(into: &w)
        return w.bytes
    }
}

extension WireDecoder {
    /// Decodes one item of an `events` payload: a retraction (`"retracted": true`, with nothing
    /// but `id`) or an entry (``event(_:)``).
    package func timelineChange(_ v: JSONValue) -> Item<TimelineChange> {
        guard let flag = v["retracted"] else { return event(v).map(TimelineChange.record) }
        var f = Fields(v)
        let id: String
        switch f.string("id") {
        case .success(let s): id = s
        case .failure(let r): return .failure(r)
        }
        guard case .bool(true) = flag else {
            return .failure(Rejection(.invalidField, "field 'retracted' must be true (an entry is retracted, or sent without it)", itemID: id))
        }
        guard case .object(let members) = v, members.count == 2 else {
            return .failure(Rejection(.invalidField, "a retraction is {\"id\": …, \"retracted\": true} and nothing else", itemID: id))
        }
        return .success(.retract(id: id))
    }
}
