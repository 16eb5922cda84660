/// Decodes and validates inbound payloads of the wire contract (`docs/mqtt-api.md`).
///
/// Structural validation only: the checks that need the clock (future timestamps, lateness)
/// belong to the ingest stage that knows "now".
public struct WireDecoder: Sendable {
    /// Payloads larger than this are refused unread.
    public var maxPayloadBytes: Int
    /// Batches longer than this are refused.
    public var maxBatch: Int

    /// Creates a decoder with limits.
    public init(maxPayloadBytes: Int = 256 * 1024, maxBatch: Int = 5000) {
        self.maxPayloadBytes = maxPayloadBytes
        self.maxBatch = maxBatch
    }

    /// One item of a decoded payload.
    public typealias Item<T> = Result<T, Rejection>

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

    /// Decodes a `samples` payload (one sample object or an array of them) sent on `user`'s topic.
    /// A bad item rejects that item only.
    public func samples(_ payload: [UInt8], user: String) -> Result<[Item<Sample>], Rejection> {
        items(payload).map { list in
            let many = list.count > 1
            return list.enumerated().map { idx, v in
                sample(v, user: user).mapError { r in var r = r; if many { r.index = idx }; return r }
            }
        }
    }

    /// Decodes one sample object.
    public func sample(_ v: JSONValue, user: String) -> Item<Sample> {
        guard case .object = v else { return .failure(Rejection(.invalidField, "a sample must be a JSON object")) }
        var fields = Fields(v)
        let id: String
        switch fields.string("id") {
        case .success(let s):
            guard !s.isEmpty, s.utf8.count <= 128 else { return .failure(Rejection(.invalidField, "field 'id' must be 1–128 characters")) }
            id = s
        case .failure(let r): return .failure(r)
        }
        func fail(_ r: Rejection) -> Item<Sample> { var r = r; r.itemID = id; return .failure(r) }
        if let u = v["user"] {
            guard case .string(let su) = u else { return fail(Rejection(.invalidField, "field 'user' must be a string")) }
            guard su == user else { return fail(Rejection(.userMismatch, "sample names user '\(su)' but was published on the topic of '\(user)'")) }
        }
        let typeName: String
        switch fields.string("type") { case .success(let s): typeName = s; case .failure(let r): return fail(r) }
        guard let metric = MetricKind(identifier: typeName) else {
            return fail(Rejection(.unknownType, "unknown sample type '\(typeName.prefix(80))'"))
        }
        let raw: Double
        switch v["value"] {
        case .number(let n)?: raw = n
        case .string(let s)? where ["nan", "inf", "-inf", "infinity", "-infinity", "+infinity"].contains(s.lowercased()):
            return fail(Rejection(.notFinite, "field 'value' is not a finite number"))
        case nil, .null?: return fail(Rejection(.missingField, "missing field 'value'"))
        default: return fail(Rejection(.invalidField, "field 'value' must be a number"))
        }
        guard raw.isFinite else { return fail(Rejection(.notFinite, "field 'value' is not a finite number")) }
        let unitName: String
        switch fields.string("unit") { case .success(let s): unitName = s; case .failure(let r): return fail(r) }
        guard let unit = MeasureUnit.healthKit(unitName) else { return fail(Rejection(.unknownUnit, "unknown unit '\(unitName.prefix(40))'")) }
        guard unit.dimension == metric.dimension else {
            return fail(Rejection(.unitMismatch, "unit '\(unitName)' is not a unit of \(metric.dimension) as \(metric.name) needs"))
        }
        let value = unit.si(raw)
        guard metric.plausibleRange.contains(value) else {
            return fail(Rejection(.outOfRange, "\(metric.name) value \(raw) \(unitName) is outside the plausible range"))
        }
        let start: (Timestamp, Int32), end: (Timestamp, Int32)
        switch fields.time("start") { case .success(let t): start = t; case .failure(let r): return fail(r) }
        switch fields.time("end") { case .success(let t): end = t; case .failure(let r): return fail(r) }
        guard end.0 >= start.0 else { return fail(Rejection(.endBeforeStart, "'end' is before 'start'")) }

        var metadata: [String: MetadataValue] = [:]
        if let m = v["metadata"] {
            guard case .object(let members) = m else { return fail(Rejection(.invalidField, "field 'metadata' must be an object")) }
            guard members.count <= 64 else { return fail(Rejection(.invalidField, "field 'metadata' has more than 64 keys")) }
            for (k, mv) in members {
                let key = MetadataKey.canonical(k)
                switch mv {
                case .string(let s): metadata[key] = .string(String(s.prefix(256)))
                case .number(let n): metadata[key] = .number(n)
                case .bool(let b): metadata[key] = .bool(b)
                default: return fail(Rejection(.invalidField, "metadata '\(k.prefix(64))' must be a string, number or boolean"))
                }
            }
        }
        var bundleId: String?
        if let s = v["source"] {
            guard case .object = s else { return fail(Rejection(.invalidField, "field 'source' must be an object")) }
            if let b = s["bundleId"] {
                guard case .string(let bs) = b else { return fail(Rejection(.invalidField, "field 'source.bundleId' must be a string")) }
                bundleId = bs
            }
        }
        var timeZone: String?
        if let tz = v["timeZone"] {
            guard case .string(let s) = tz else { return fail(Rejection(.invalidField, "field 'timeZone' must be a string")) }
            timeZone = s
        } else if case .string(let s)? = metadata[MetadataKey.timeZone] {
            timeZone = s
        }
        if let tz = timeZone, LocalCalendar.cached(tz) == nil {
            return fail(Rejection(.invalidTimeZone, "unknown IANA time zone '\(tz.prefix(64))'"))
        }
        let userEntered = metadata[MetadataKey.wasUserEntered]?.asBool ?? false
        let apple = bundleId?.hasPrefix("com.apple.health") ?? true
        let calibrated = metadata[MetadataKey.appleDeviceCalibrated]?.asBool
        return .success(Sample(id: id, metric: metric, value: value, start: start.0, end: end.0, utcOffset: end.1,
                               timeZone: timeZone, provenance: (userEntered || !apple) ? .userEntered : .device,
                               bundleId: bundleId, calibrated: calibrated, metadata: metadata))
    }

    /// Decodes an `events` payload: clinical events and annotations, one or an array.
    /// Days are given as `date` (`YYYY-MM-DD`, the user's local date) or `start`/`end` dates for a range.
    public func events(_ payload: [UInt8], user: String) -> Result<[Item<TimelineEvent>], Rejection> {
        items(payload).map { list in
            list.enumerated().map { idx, v in
                event(v).mapError { r in var r = r; if list.count > 1 { r.index = idx }; return r }
            }
        }
    }

    /// Decodes one timeline entry.
    public func event(_ v: JSONValue) -> Item<TimelineEvent> {
        guard case .object = v else { return .failure(Rejection(.invalidField, "an event must be a JSON object")) }
        var f = Fields(v)
        let id: String, kind: String
        switch f.string("id") { case .success(let s): id = s; case .failure(let r): return .failure(r) }
        switch f.string("kind") { case .success(let s): kind = s; case .failure(let r): return .failure(r) }
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
        if case .string(let s)? = v["note"] { note = String(s.prefix(1000)) }
        return .success(TimelineEvent(id: id, category: category, kind: kind, firstDay: first, lastDay: last, note: note))
    }

    /// Decodes a `deletions` payload: `{"ids": [...]}`, a bare array of ids, or one id string.
    public func deletions(_ payload: [UInt8]) -> Result<[String], Rejection> {
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
            return .success(ids)
        }
    }

    /// Decodes a `profile` payload: `{"timeZone": "Europe/Zurich"}`.
    public func profile(_ payload: [UInt8]) -> Result<LocalCalendar, Rejection> {
        items(payload).flatMap { list in
            guard list.count == 1, case .object = list[0] else { return .failure(Rejection(.invalidField, "a profile is one JSON object")) }
            var f = Fields(list[0])
            switch f.string("timeZone") {
            case .failure(let r): return .failure(r)
            case .success(let tz):
                guard let cal = LocalCalendar.cached(tz) else { return .failure(Rejection(.invalidTimeZone, "unknown IANA time zone '\(tz.prefix(64))'")) }
                return .success(cal)
            }
        }
    }
}

/// Typed access to an object's fields with specific errors.
struct Fields {
    let v: JSONValue
    init(_ v: JSONValue) { self.v = v }

    mutating func string(_ key: String) -> Result<String, Rejection> {
        switch v[key] {
        case .string(let s)?: return .success(s)
        case nil, .null?: return .failure(Rejection(.missingField, "missing field '\(key)'"))
        default: return .failure(Rejection(.invalidField, "field '\(key)' must be a string"))
        }
    }

    mutating func time(_ key: String) -> Result<(Timestamp, Int32), Rejection> {
        switch string(key) {
        case .failure(let r): return .failure(r)
        case .success(let s):
            guard let t = ISO8601.parse(s) else {
                return .failure(Rejection(.invalidField, "field '\(key)' must be an ISO 8601 timestamp with offset"))
            }
            return .success(t)
        }
    }
}
