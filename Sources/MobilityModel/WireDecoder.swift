import CSimdJSON
#if canImport(Glibc)
import Glibc
#endif

/// Decodes and validates inbound payloads of the wire contract (`docs/mqtt-api.md`).
///
/// Structural validation only: the checks that need the clock (future timestamps, lateness)
/// belong to the ingest stage that knows "now".
public struct WireDecoder: Sendable {
    /// Payloads larger than this are refused unread.
    public var maxPayloadBytes: Int
    /// Batches longer than this are refused.
    public var maxBatch: Int

    /// The default payload limit: 256 KiB.
    public static let defaultMaxPayloadBytes = 256 * 1024
    /// The default batch limit: 1000 items of a typical ~260-byte sample (a source with a device
    /// name, no metadata) fit the default payload limit, so both limits are reachable with real
    /// items; samples with metadata (~450 B) reach the payload limit first (~580 a payload).
    public static let defaultMaxBatch = 1000

    /// Creates a decoder with limits.
    public init(maxPayloadBytes: Int = WireDecoder.defaultMaxPayloadBytes, maxBatch: Int = WireDecoder.defaultMaxBatch) {
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
    ///
    /// The hot path: simdjson (`CSimdJSON`) validates the whole document and hands back the
    /// contract's fields flat; no JSON tree is built and only the id (and metadata, when present)
    /// become Swift strings.
    public func samples(_ payload: [UInt8], user: String) -> Result<[Item<Sample>], Rejection> {
        guard payload.count <= maxPayloadBytes else {
            return .failure(Rejection(.payloadTooLarge, "payload of \(payload.count) bytes exceeds the limit of \(maxPayloadBytes)"))
        }
        guard let parser = SampleJSONParser.forThisThread else {
            return .failure(Rejection(.notJSON, "the JSON parser could not allocate memory"))
        }
        var doc = mw_sample_doc()
        let rc = payload.withUnsafeBufferPointer { mw_parse_samples(parser, $0.baseAddress, $0.count, UInt32(maxBatch), &doc) }
        guard rc == 0 else {
            if doc.number_out_of_range != 0, case .success(let tree) = JSONValue.parse(payload) { return samples(outOfRange: tree, user: user) }
            return .failure(Rejection(.notJSON, "invalid JSON: " + (doc.error_message.map { String(cString: $0) } ?? "error \(rc)")))
        }
        let count = Int(doc.count)
        guard count <= maxBatch else { return .failure(Rejection(.tooManyItems, "batch of \(count) items exceeds the limit of \(maxBatch)")) }
        var out: [Item<Sample>] = []
        out.reserveCapacity(count)
        // Each item by pointer: the C struct is ~300 bytes, and passing it by value copied it.
        for idx in 0..<count { out.append(sample(doc.items + idx, members: doc.members, user: user, index: count > 1 ? idx : nil)) }
        return .success(out)
    }

    /// The rare payload with a number simdjson cannot hold (`1e999`, a 30-digit integer) but that
    /// is valid JSON: an item holding a non-finite number is refused as `not_finite`; the others
    /// are decoded from their re-serialised text, so that one such item rejects only itself.
    private func samples(outOfRange tree: JSONValue, user: String) -> Result<[Item<Sample>], Rejection> {
        var list = [tree]
        if case .array(let a) = tree {
            guard a.count <= maxBatch else { return .failure(Rejection(.tooManyItems, "batch of \(a.count) items exceeds the limit of \(maxBatch)")) }
            list = a
        }
        let many = list.count > 1
        return .success(list.enumerated().map { idx, item in
            var r: Item<Sample>
            if item.containsNonFiniteNumber {
                var id: String?
                if case .string(let s)? = item["id"] { id = s }
                r = .failure(Rejection(.notFinite, "a number in the sample is not a finite double", itemID: id))
            } else {
                switch samples(Array(item.text.utf8), user: user) {
                case .success(let one) where one.count == 1: r = one[0]
                case .success: r = .failure(Rejection(.invalidField, "a sample must be a JSON object"))
                case .failure(let e): r = .failure(e)
                }
            }
            if many, case .failure(var rej) = r { rej.index = idx; r = .failure(rej) }
            return r
        })
    }

    /// Validates one sample item's fields.
    private func sample(_ fp: UnsafePointer<mw_sample_fields>, members: UnsafePointer<mw_json_member>?, user: String, index: Int?) -> Item<Sample> {
        // Every rejection names the item's position in a batch, and its id once known.
        func reject(_ r: Rejection, id: String? = nil) -> Item<Sample> { var r = r; r.itemID = id; r.index = index; return .failure(r) }
        guard fp.pointee.is_object != 0 else { return reject(Rejection(.invalidField, "a sample must be a JSON object")) }
        let id: String
        switch fp.pointee.id.string("id") {
        case .success(let s):
            guard fp.pointee.id.len > 0, fp.pointee.id.len <= 128 else { return reject(Rejection(.invalidField, "field 'id' must be 1–128 characters")) }
            id = s
        case .failure(let r): return reject(r)
        }
        func fail(_ r: Rejection) -> Item<Sample> { reject(r, id: id) }
        if fp.pointee.user.type != UInt8(MW_ABSENT.rawValue) {
            guard fp.pointee.user.type == UInt8(MW_STRING.rawValue) else { return fail(Rejection(.invalidField, "field 'user' must be a string")) }
            guard fp.pointee.user.bytes.elementsEqual(user.utf8) else {
                return fail(Rejection(.userMismatch, "sample names user '\(fp.pointee.user.text)' but was published on the topic of '\(user)'"))
            }
        }
        guard fp.pointee.type.isString else { return fail(fp.pointee.type.typeError("type")) }
        guard let metric = MetricKind(utf8: fp.pointee.type.bytes) else {
            return fail(Rejection(.unknownType, "unknown sample type '\(fp.pointee.type.text.prefix(80))'"))
        }
        let raw: Double
        switch Int(fp.pointee.value.type) {
        case Int(MW_NUMBER.rawValue): raw = fp.pointee.value.number
        case Int(MW_STRING.rawValue) where ["nan", "inf", "-inf", "infinity", "-infinity", "+infinity"].contains(fp.pointee.value.text.lowercased()):
            return fail(Rejection(.notFinite, "field 'value' is not a finite number"))
        case Int(MW_ABSENT.rawValue), Int(MW_NULL.rawValue): return fail(Rejection(.missingField, "missing field 'value'"))
        default: return fail(Rejection(.invalidField, "field 'value' must be a number"))
        }
        guard raw.isFinite else { return fail(Rejection(.notFinite, "field 'value' is not a finite number")) }
        guard fp.pointee.unit.isString else { return fail(fp.pointee.unit.typeError("unit")) }
        guard let unit = MeasureUnit.healthKit(utf8: fp.pointee.unit.bytes) else { return fail(Rejection(.unknownUnit, "unknown unit '\(fp.pointee.unit.text.prefix(40))'")) }
        guard unit.dimension == metric.dimension else {
            return fail(Rejection(.unitMismatch, "unit '\(fp.pointee.unit.text)' is not a unit of \(metric.dimension) as \(metric.name) needs"))
        }
        let value = unit.si(raw)
        guard metric.plausibleRange.contains(value) else {
            return fail(Rejection(.outOfRange, "\(metric.name) value \(raw) \(fp.pointee.unit.text) is outside the plausible range"))
        }
        let start: (Timestamp, offsetSeconds: Int32), end: (Timestamp, offsetSeconds: Int32)
        switch fp.pointee.start.time("start") { case .success(let t): start = t; case .failure(let r): return fail(r) }
        switch fp.pointee.end.time("end") { case .success(let t): end = t; case .failure(let r): return fail(r) }
        guard end.0 >= start.0 else { return fail(Rejection(.endBeforeStart, "'end' is before 'start'")) }

        var metadata: [String: MetadataValue] = [:]
        // The keys the decoder reads itself, noted as they are stored (no lookups afterwards).
        var metadataZone: String?, userEntered = false, calibrated: Bool?
        if fp.pointee.metadata.type != UInt8(MW_ABSENT.rawValue) {
            guard fp.pointee.metadata.type == UInt8(MW_OBJECT.rawValue) else { return fail(Rejection(.invalidField, "field 'metadata' must be an object")) }
            guard fp.pointee.metadata_count <= 64 else { return fail(Rejection(.invalidField, "field 'metadata' has more than 64 keys")) }
            if fp.pointee.metadata_count > 0, let members {
                metadata.reserveCapacity(Int(fp.pointee.metadata_count))
                for m in UnsafeBufferPointer(start: members + Int(fp.pointee.metadata_first), count: Int(fp.pointee.metadata_count)) {
                    // HealthKit's keys, in either spelling, without building a string.
                    let known = MetadataKey.table[utf8: m.key.bytes]
                    let key = known?.key ?? MetadataKey.canonical(m.key.text)
                    if metadata[key] != nil { continue } // the first of a duplicated key wins
                    let v: MetadataValue
                    switch Int(m.value.type) {
                    case Int(MW_STRING.rawValue): v = .string(String(m.value.text.prefix(256)))
                    case Int(MW_NUMBER.rawValue): v = .number(m.value.number)
                    case Int(MW_BOOL.rawValue): v = .bool(m.value.boolean != 0)
                    default: return fail(Rejection(.invalidField, "metadata '\(m.key.text.prefix(64))' must be a string, number or boolean"))
                    }
                    metadata[key] = v
                    switch known?.role {
                    case .timeZone?: if case .string(let z) = v { metadataZone = z }
                    case .wasUserEntered?: userEntered = v.asBool ?? false
                    case .appleDeviceCalibrated?: calibrated = v.asBool
                    default: break
                    }
                }
            }
        }
        var bundleId: String?
        if fp.pointee.source.type != UInt8(MW_ABSENT.rawValue) {
            guard fp.pointee.source.type == UInt8(MW_OBJECT.rawValue) else { return fail(Rejection(.invalidField, "field 'source' must be an object")) }
            if fp.pointee.bundle_id.type != UInt8(MW_ABSENT.rawValue) {
                guard fp.pointee.bundle_id.isString else { return fail(Rejection(.invalidField, "field 'source.bundleId' must be a string")) }
                bundleId = fp.pointee.bundle_id.text
            }
        }
        var timeZone: String?
        if fp.pointee.time_zone.type != UInt8(MW_ABSENT.rawValue) {
            guard fp.pointee.time_zone.isString else { return fail(Rejection(.invalidField, "field 'timeZone' must be a string")) }
            timeZone = fp.pointee.time_zone.text
        } else {
            timeZone = metadataZone
        }
        if let tz = timeZone, LocalCalendar.cached(tz) == nil {
            return fail(Rejection(.invalidTimeZone, "unknown IANA time zone '\(tz.prefix(64))'"))
        }
        let apple = fp.pointee.bundle_id.isString ? fp.pointee.bundle_id.len >= 16 && memcmp(fp.pointee.bundle_id.str, "com.apple.health", 16) == 0 : true
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

extension mw_json_field {
    /// The string's UTF-8 bytes (empty unless a string).
    var bytes: UnsafeBufferPointer<UInt8> {
        guard type == UInt8(MW_STRING.rawValue), let str else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: UnsafeRawPointer(str).assumingMemoryBound(to: UInt8.self), count: Int(len))
    }

    /// The string as a Swift string (empty unless a string).
    var text: String { String(decoding: bytes, as: UTF8.self) }

    var isString: Bool { type == UInt8(MW_STRING.rawValue) }

    /// The rejection for a required string field that is absent, null or of another type.
    func typeError(_ key: String) -> Rejection {
        type == UInt8(MW_ABSENT.rawValue) || type == UInt8(MW_NULL.rawValue)
            ? Rejection(.missingField, "missing field '\(key)'") : Rejection(.invalidField, "field '\(key)' must be a string")
    }

    /// A required string field.
    func string(_ key: String) -> Result<String, Rejection> { isString ? .success(text) : .failure(typeError(key)) }

    /// A required ISO 8601 timestamp field.
    func time(_ key: String) -> Result<(Timestamp, offsetSeconds: Int32), Rejection> {
        guard isString else { return .failure(typeError(key)) }
        guard let t = ISO8601.parse(utf8: bytes) else {
            return .failure(Rejection(.invalidField, "field '\(key)' must be an ISO 8601 timestamp with offset"))
        }
        return .success(t)
    }
}

/// One simdjson parser per thread (a parser is reusable but not shareable), created on first use
/// and freed when the thread exits.
enum SampleJSONParser {
    /// Documents up to this size; larger ones are refused before parsing (`maxPayloadBytes`).
    static let capacity = 64 << 20

    private static let key: pthread_key_t = {
        var k = pthread_key_t()
        let rc = pthread_key_create(&k) { p in mw_json_parser_destroy(OpaquePointer(p)) }
        precondition(rc == 0, "pthread_key_create failed")
        return k
    }()

    static var forThisThread: OpaquePointer? {
        if let p = pthread_getspecific(key) { return OpaquePointer(p) }
        guard let p = mw_json_parser_create(capacity, JSONValue.maxDepth) else { return nil }
        pthread_setspecific(key, UnsafeRawPointer(p))
        return p
    }
}
