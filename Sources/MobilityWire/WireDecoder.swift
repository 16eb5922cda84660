import MobilityModel

/// Decodes and validates inbound payloads of the wire contract (`docs/mqtt-api.md`).
///
/// Structural validation only: the checks that need the clock (future timestamps, lateness)
/// belong to the ingest stage that knows "now". Samples, the hot path, are decoded through
/// simdjson (`WireDecoder+Samples.swift`); the other topics through the model's tree parser.
package struct WireDecoder: Sendable {
    /// Payloads larger than this are refused unread.
    package var maxPayloadBytes: Int
    /// Batches longer than this are refused.
    package var maxBatch: Int

    /// The default payload limit: 256 KiB.
    package static let defaultMaxPayloadBytes = 256 * 1024
    /// The default batch limit: 1000 items of a typical ~260-byte sample (a source with a device
    /// name, no metadata) fit the default payload limit, so both limits are reachable with real
    /// items; samples with metadata (~450 B) reach the payload limit first (~580 a payload).
    package static let defaultMaxBatch = 1000

    /// Creates a decoder with limits.
    package init(maxPayloadBytes: Int = WireDecoder.defaultMaxPayloadBytes, maxBatch: Int = WireDecoder.defaultMaxBatch) {
        self.maxPayloadBytes = maxPayloadBytes
        self.maxBatch = maxBatch
    }

    /// One item of a decoded payload.
    package typealias Item<T> = Result<T, Rejection>

    private func items(_ payload: [UInt8]) -> Result<[JSONValue], Rejection> {
        guard payload.count <= maxPayloadBytes else {
            return .failure(Rejection(.payloadTooLarge, "payload of \(payload.count) bytes exceeds the limit of \(maxPayloadBytes)"))
        }
        switch JSONValue.parse(payload) {
        case .failure(let e): return .failure(Rejection(.notJSON, e.description))
        case .success(.array(let a)):
            guard a.count <= maxBatch else { return .failure(Rejection(.tooManyItems, "batch of \(a.count) items exceeds the limit of \(maxBatch)")) }
            return .success(a)
        case .success(let v): return .success([v])
        }
    }

    /// Decodes an `events` payload: clinical events and annotations, one or an array, and
    /// retractions of entries (``TimelineChange``).
    /// Days are given as `date` (`YYYY-MM-DD`, the user's local date) or `start`/`end` dates for a range.
    package func events(_ payload: [UInt8], user: String) -> Result<[Item<TimelineChange>], Rejection> {
        items(payload).map { list in
            list.enumerated().map { idx, v in
                timelineChange(v).mapError { r in
                    var r = r; if list.count > 1 { r.index = idx }; return r
                }
            }
        }
    }

    /// Decodes one timeline entry.
    package func event(_ v: JSONValue) -> Item<TimelineEvent> {
        guard case .object = v else { return .failure(Rejection(.invalidField, "an event must be a JSON object")) }
        var f = Fields(v)
        let id: String, kind: String
        switch f.string("id") {
        case .success(let s): id = s;
        case .failure(let r): return .failure(r)
        }
        switch f.string("kind") {
        case .success(let s): kind = s;
        case .failure(let r): return .failure(r)
        }
        guard !kind.isEmpty, kind.utf8.count <= 64, kind.utf8.allSatisfy({ ($0 >= 97 && $0 <= 122) || $0 == 95 || ($0 >= 48 && $0 <= 57) }) else {
            return .failure(Rejection(.invalidField, "field 'kind' must be a lower_snake_case name", itemID: id))
        }
        let category: EventCategory
        switch v["category"] {
        case .string("clinical")?: category = .clinical
        case .string("annotation")?: category = .annotation
        case nil: category = TimelineEvent.clinicalKinds.contains(kind) ? .clinical : .annotation
        default: return .failure(Rejection(.invalidField, "field 'category' must be \"clinical\" or \"annotation\"", itemID: id))
        }
        func date(_ key: String) -> Result<DayNumber?, Rejection> {
            guard let x = v[key] else { return .success(nil) }
            guard case .string(let s) = x, let d = CivilDate(parsing: Substring(s)) else {
                return .failure(Rejection(.invalidField, "field '\(key)' must be a date YYYY-MM-DD", itemID: id))
            }
            return .success(d.dayNumber)
        }
        let first: DayNumber, last: DayNumber
        switch (date("date"), date("start"), date("end")) {
        case (.success(let d?), .success(nil), .success(nil)): first = d; last = d
        case (.success(nil), .success(let s?), .success(let e)):
            first = s; last = e ?? s
        case (.failure(let r), _, _), (_, .failure(let r), _), (_, _, .failure(let r)): return .failure(r)
        default: return .failure(Rejection(.missingField, "an event needs 'date', or 'start' (and optional 'end')", itemID: id))
        }
        guard last >= first else { return .failure(Rejection(.endBeforeStart, "'end' is before 'start'", itemID: id)) }
        guard category == .annotation || first == last else {
            return .failure(Rejection(.invalidField, "a clinical event is on one day: use 'date'", itemID: id))
        }
        var note: String?
        switch v["note"] {
        case nil, .null?: break
        case .string(let s)?:
            // Refused, not cut: a clinician's note that ends mid-sentence says something else.
            guard s.utf8.count <= TimelineEvent.maxNoteBytes else {
                return .failure(
                    Rejection(.invalidField, "field 'note' is \(s.utf8.count) bytes, over the limit of \(TimelineEvent.maxNoteBytes)", itemID: id))
            }
            note = s
        default: return .failure(Rejection(.invalidField, "field 'note' must be a string", itemID: id))
        }
        return .success(TimelineEvent(id: id, category: category, kind: kind, firstDay: first, lastDay: last, note: note))
    }

    /// Decodes a `deletions` payload: `{"ids": [...]}`, a bare array of ids, or one id string.
    package func deletions(_ payload: [UInt8]) -> Result<[String], Rejection> {
        items(payload).flatMap { list in
            var ids: [String] = []
            for v in list {
                switch v {
                case .string(let s): ids.append(s)
                case .object:
                    guard case .array(let a)? = v["ids"] else { return .failure(Rejection(.missingField, "missing field 'ids'")) }
                    for x in a {
                        guard case .string(let s) = x else { return .failure(Rejection(.invalidField, "'ids' must hold strings")) }
                        ids.append(s)
                    }
                default: return .failure(Rejection(.invalidField, "a deletion is an id string or {\"ids\": [...]}"))
                }
            }
            // Each id costs a tombstone in the user's state: bound one message as a batch is.
            guard ids.count <= maxBatch else { return .failure(Rejection(.tooManyItems, "deletion of \(ids.count) ids exceeds the limit of \(maxBatch)")) }
            return .success(ids)
        }
    }

    /// Decodes a `profile` payload: `{"timeZone": "Europe/Zurich"}` (its care teams are checked too:
    /// a profile with a bad `careTeams` is refused whole).
    package func profile(_ payload: [UInt8]) -> Result<LocalCalendar, Rejection> {
        userProfile(payload).map(\.calendar)
    }

    /// Decodes a `profile` payload with its care teams:
    /// `{"timeZone": "Europe/Zurich", "careTeams": ["physio-north"]}` (`careTeams` optional).
    package func userProfile(_ payload: [UInt8]) -> Result<UserProfile, Rejection> {
        items(payload).flatMap { list in
            guard list.count == 1, case .object = list[0] else { return .failure(Rejection(.invalidField, "a profile is one JSON object")) }
            var f = Fields(list[0])
            switch f.string("timeZone") {
            case .failure(let r): return .failure(r)
            case .success(let tz):
                guard let cal = LocalCalendar.cached(tz) else { return .failure(Rejection(.invalidTimeZone, "unknown IANA time zone '\(tz.prefix(64))'")) }
                switch UserProfile.careTeams(list[0]["careTeams"]) {
                case .failure(let r): return .failure(r)
                case .success(let teams): return .success(UserProfile(calendar: cal, careTeams: teams))
                }
            }
        }
    }
}
