import CSimdJSON
import MobilityModel

#if canImport(Glibc)
    import Glibc
#endif

extension WireDecoder {
    /// Decodes a `samples` payload (one sample object or an array of them) sent on `user`'s topic.
    /// A bad item rejects that item only.
    ///
    /// The hot path: simdjson (`CSimdJSON`) validates the whole document and hands back the
    /// contract's fields flat; no JSON tree is built and only the id (and metadata, when present)
    /// become Swift strings.
    package func samples(_ payload: [UInt8], user: String) -> Result<[Item<Sample>], Rejection> {
        payload.withUnsafeBufferPointer { samples(utf8: $0, user: user) }
    }

    /// ``samples(_:user:)`` of payload bytes the caller holds (a recorded traffic line's, uncopied).
    package func samples(utf8 payload: UnsafeBufferPointer<UInt8>, user: String) -> Result<[Item<Sample>], Rejection> {
        guard payload.count <= maxPayloadBytes else {
            return .failure(Rejection(.payloadTooLarge, "payload of \(payload.count) bytes exceeds the limit of \(maxPayloadBytes)"))
        }
        guard let parser = SampleJSONParser.forThisThread else {
            return .failure(Rejection(.notJSON, "the JSON parser could not allocate memory"))
        }
        var doc = mw_sample_doc()
        let rc = mw_parse_samples(parser, payload.baseAddress, payload.count, UInt32(maxBatch), &doc)
        guard rc == 0 else {
            if doc.number_out_of_range != 0, case .success(let tree) = JSONValue.parse(Array(payload)) { return samples(outOfRange: tree, user: user) }
            return .failure(Rejection(.notJSON, "invalid JSON: " + (doc.error_message.map { String(cString: $0) } ?? "error \(rc)")))
        }
        let count = Int(doc.count)
        guard count <= maxBatch else { return .failure(Rejection(.tooManyItems, "batch of \(count) items exceeds the limit of \(maxBatch)")) }
        var out: [Item<Sample>] = []
        out.reserveCapacity(count)
        // What the items of one payload repeat: the dates of their timestamps, their bundle id.
        var repeats = PayloadRepeats()
        // Each item by pointer: the C struct is ~300 bytes, and passing it by value copied it.
        for idx in 0..<count {
            out.append(sample(doc.items + idx, members: doc.members, user: user, index: count > 1 ? idx : nil, repeats: &repeats))
        }
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
        return .success(
            list.enumerated().map { idx, item in
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
    private func sample(
        _ fp: UnsafePointer<mw_sample_fields>, members: UnsafePointer<mw_json_member>?, user: String, index: Int?, repeats: inout PayloadRepeats
    ) -> Item<Sample> {
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
        guard let unit = MeasureUnit.healthKit(utf8: fp.pointee.unit.bytes) else {
            return fail(Rejection(.unknownUnit, "unknown unit '\(fp.pointee.unit.text.prefix(40))'"))
        }
        guard unit.dimension == metric.dimension else {
            return fail(Rejection(.unitMismatch, "unit '\(fp.pointee.unit.text)' is not a unit of \(metric.dimension) as \(metric.name) needs"))
        }
        let value = unit.si(raw)
        guard metric.plausibleRange.contains(value) else {
            return fail(Rejection(.outOfRange, "\(metric.name) value \(raw) \(fp.pointee.unit.text) is outside the plausible range"))
        }
        let start: (Timestamp, offsetSeconds: Int32), end: (Timestamp, offsetSeconds: Int32)
        switch fp.pointee.start.time("start", dates: &repeats.dates) {
        case .success(let t): start = t;
        case .failure(let r): return fail(r)
        }
        switch fp.pointee.end.time("end", dates: &repeats.dates) {
        case .success(let t): end = t;
        case .failure(let r): return fail(r)
        }
        guard end.0 >= start.0 else { return fail(Rejection(.endBeforeStart, "'end' is before 'start'")) }

        var metadata: [String: MetadataValue] = [:]
        // The keys the decoder reads itself, noted as they are stored (no lookups afterwards).
        var metadataZone: String?, userEntered = false, calibrated: Bool?
        if fp.pointee.metadata.type != UInt8(MW_ABSENT.rawValue) {
            guard fp.pointee.metadata.type == UInt8(MW_OBJECT.rawValue) else { return fail(Rejection(.invalidField, "field 'metadata' must be an object")) }
            guard fp.pointee.metadata_count <= 64 else { return fail(Rejection(.invalidField, "field 'metadata' has more than 64 keys")) }
            if fp.pointee.metadata_count > 0, let members {
                let list = UnsafeBufferPointer(start: members + Int(fp.pointee.metadata_first), count: Int(fp.pointee.metadata_count))
                if let same = repeats.metadata.lookup(list) {
                    // The same members as the last item's: its dictionary shared, not built again.
                    metadata = same.values
                    metadataZone = same.zone
                    userEntered = same.userEntered
                    calibrated = same.calibrated
                } else {
                    // Sized at once by the inlinable initialiser (the generic `reserveCapacity` of an
                    // empty dictionary was an unspecialised call into the runtime: ~1.2 k instructions).
                    metadata = Dictionary(minimumCapacity: list.count)
                    for m in list {
                        // HealthKit's keys, in either spelling, without building a string.
                        let known = MetadataKey.table[utf8: m.key.bytes]
                        let key = known?.key ?? MetadataKey.canonical(m.key.text)
                        if metadata[key] != nil { continue }  // the first of a duplicated key wins
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
                    repeats.metadata.note(list, DecodedMetadata(values: metadata, zone: metadataZone, userEntered: userEntered, calibrated: calibrated))
                }
            }
        }
        var bundleId: String?
        if fp.pointee.source.type != UInt8(MW_ABSENT.rawValue) {
            guard fp.pointee.source.type == UInt8(MW_OBJECT.rawValue) else { return fail(Rejection(.invalidField, "field 'source' must be an object")) }
            if fp.pointee.bundle_id.type != UInt8(MW_ABSENT.rawValue) {
                guard fp.pointee.bundle_id.isString else { return fail(Rejection(.invalidField, "field 'source.bundleId' must be a string")) }
                bundleId = repeats.bundleId.string(fp.pointee.bundle_id.bytes)
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
        return .success(
            Sample(
                id: id, metric: metric, value: value, start: start.0, end: end.0, utcOffset: end.1,
                timeZone: timeZone, provenance: (userEntered || !apple) ? .userEntered : .device,
                bundleId: bundleId, calibrated: calibrated, metadata: metadata))
    }
}
