import MobilityModel

import struct RuleEngine.AlertStateMachine
import struct RuleEngine.SampleID
import struct RuleEngine.StoredValue
import struct RuleEngine.SyncEntry
import struct RuleEngine.Tombstone
import struct RuleEngine.UserSnapshot

/// A compact binary encoding of a user's ``UserSnapshot`` (versioned by the store's schema): the
/// store writes the snapshot's fields and reads them back strictly; what they mean (the folded
/// table's layout, alignment with the rules) is the engine's.
enum UserStateCodec {
    struct Writer {
        var bytes: [UInt8] = []
        mutating func u8(_ v: UInt8) { bytes.append(v) }
        mutating func i32(_ v: Int32) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
        mutating func i64(_ v: Int64) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
        mutating func f64(_ v: Double) { i64(Int64(bitPattern: v.bitPattern)) }
        mutating func str(_ s: String) { let b = Array(s.utf8); i32(Int32(b.count)); bytes.append(contentsOf: b) }
        mutating func optI32(_ v: Int32?) { u8(v == nil ? 0 : 1); i32(v ?? 0) }
    }

    struct Reader {
        let b: [UInt8]
        var i = 0
        struct Truncated: Error {}
        /// Well-formed bytes that break an invariant (folded days out of order).
        struct Inconsistent: Error {}
        /// A tag byte that names no known case.
        struct UnknownTag: Error { var field: String; var tag: UInt8 }
        mutating func u8() throws -> UInt8 { guard i < b.count else { throw Truncated() }; defer { i += 1 }; return b[i] }
        mutating func i32() throws -> Int32 {
            guard i + 4 <= b.count else { throw Truncated() }
            let v = b.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: i, as: UInt32.self) }
            i += 4
            return Int32(bitPattern: UInt32(littleEndian: v))
        }
        mutating func i64() throws -> Int64 {
            guard i + 8 <= b.count else { throw Truncated() }
            let v = b.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: i, as: UInt64.self) }
            i += 8
            return Int64(bitPattern: UInt64(littleEndian: v))
        }
        mutating func f64() throws -> Double { Double(bitPattern: UInt64(bitPattern: try i64())) }
        mutating func str() throws -> String {
            let n = Int(try i32())
            guard n >= 0, i + n <= b.count else { throw Truncated() }
            defer { i += n }
            return String(decoding: b[i..<(i + n)], as: UTF8.self)
        }
        /// A string equal to one of `known` is that instance (no allocation, and an array of
        /// them can be the caller's own); any other is read as usual.
        mutating func str(oneOf known: [String]) throws -> String {
            let n = Int(try i32())
            guard n >= 0, i + n <= b.count else { throw Truncated() }
            defer { i += n }
            for k in known where k.utf8.count == n && k.utf8.elementsEqual(b[i..<(i + n)]) { return k }
            return String(decoding: b[i..<(i + n)], as: UTF8.self)
        }
        mutating func optI32(_ field: String) throws -> Int32? { let has = try bool(field); let v = try i32(); return has ? v : nil }
        /// A flag written as 0 or 1.
        mutating func bool(_ field: String) throws -> Bool {
            let v = try u8()
            guard v <= 1 else { throw UnknownTag(field: field, tag: v) }
            return v == 1
        }
        /// A tag byte of an enum with `UInt8` raw values.
        @inline(__always) mutating func tag<T: RawRepresentable<UInt8>>(_ field: String, as _: T.Type = T.self) throws -> T {
            let v = try u8()
            guard let t = T(rawValue: v) else { throw UnknownTag(field: field, tag: v) }
            return t
        }
        /// Skips `n` bytes.
        mutating func skip(_ n: Int) throws { guard n >= 0, i + n <= b.count else { throw Truncated() }; i += n }
        /// A non-negative element count.
        mutating func count() throws -> Int32 { let n = try i32(); guard n >= 0 else { throw Truncated() }; return n }
    }

    /// Marks the second blob format (a v1 blob starts with a non-negative string length).
    static let v2Marker: Int32 = -2
    /// Marks the third: the v2 layout without the open days, which the store keeps one row each.
    static let v3Marker: Int32 = -3

    /// Encodes a snapshot's head: v3 (`withOpenDays` false, the store's form: open days go to
    /// their own rows, see ``encode(day:chunk:)``) or v2 (everything in one blob).
    static func encode(_ s: UserSnapshot, withOpenDays: Bool = true) -> [UInt8] {
        var w = Writer()
        w.bytes.reserveCapacity(64 + s.foldedDays.count * 12 + s.foldedValues.count * 8)
        w.i32(withOpenDays ? v2Marker : v3Marker)
        w.str(s.calendar)
        // 0 no profile, 1 a profile, 2 a profile with care teams (a count and the team ids follow):
        // a state without teams is the same bytes as before teams were kept.
        w.u8(!s.hasProfile ? 0 : s.careTeams.isEmpty ? 1 : 2)
        if s.hasProfile, !s.careTeams.isEmpty {
            w.i32(Int32(s.careTeams.count))
            for t in s.careTeams { w.str(t) }
        }
        w.optI32(s.firstDay)
        w.optI32(s.lastClosedDay)
        if withOpenDays {
            w.i32(Int32(s.openDays.count))
            for d in s.openDays {
                w.i32(d.day)
                encodeValues(s.values(of: d), &w)
            }
        }
        w.i32(Int32(s.foldedInputs.count))
        for input in s.foldedInputs { encode(input, &w) }
        // Folded days as (day, mask, values in input order).
        w.i32(Int32(s.foldedDays.count))
        var at = 0
        for d in s.foldedDays {
            w.i32(d.day)
            w.i64(Int64(bitPattern: d.mask))
            let n = d.mask.nonzeroBitCount
            for v in s.foldedValues[at..<(at + n)] { w.f64(v) }
            at += n
        }
        w.i32(Int32(s.syncIndex.count))
        for e in s.syncIndex { w.i64(Int64(bitPattern: e.sync.rawValue)); w.i64(e.version); w.i64(Int64(bitPattern: e.id.rawValue)) }
        encodeTail(s, &w)
        encodeSections(s, &w)
        return w.bytes
    }

    /// Tags of the optional sections after the tail, each written only when it has content, so
    /// that a state without them is the same bytes as before they existed.
    enum Section: UInt8 {
        /// Deleted sample ids (``Tombstone``s): a count, then (id, day) each.
        case tombstones = 1
        /// The alert log (``UserSnapshot/alertLog``): the first day it covers, a count, then (day,
        /// rule name, state) each.
        case alertLog = 2
    }

    /// The optional sections, in tag order.
    static func encodeSections(_ s: UserSnapshot, _ w: inout Writer) {
        if !s.tombstones.isEmpty {
            w.u8(Section.tombstones.rawValue)
            w.i32(Int32(s.tombstones.count))
            for t in s.tombstones { w.i64(Int64(bitPattern: t.id.rawValue)); w.i32(t.day) }
        }
        if let start = s.alertLogStart {
            w.u8(Section.alertLog.rawValue)
            w.i32(start)
            w.i32(Int32(s.alertLog.count))
            for e in s.alertLog {
                w.i32(e.day)
                w.str(e.rule)
                encode(e.machine, &w)
            }
        }
    }

    /// Reads the optional sections up to the end of the bytes (none in a head written before them).
    static func decodeSections(_ s: inout UserSnapshot, _ r: inout Reader, alertNames known: [String]) throws {
        var previous: UInt8 = 0
        while r.i < r.b.count {
            let section: Section = try r.tag("section")
            guard section.rawValue > previous else { throw Reader.Inconsistent() }  // each once, in order
            previous = section.rawValue
            switch section {
            case .tombstones:
                let n = try r.count()
                s.tombstones.reserveCapacity(min(Int(n), (r.b.count - r.i) / 12))
                for _ in 0..<n {
                    s.tombstones.append(Tombstone(id: SampleID(rawValue: UInt64(bitPattern: try r.i64())), day: try r.i32()))
                }
            case .alertLog:
                s.alertLogStart = try r.i32()
                let n = try r.count()
                s.alertLog.reserveCapacity(min(Int(n), (r.b.count - r.i) / 33))
                for _ in 0..<n {
                    let day = try r.i32(), rule = try r.str(oneOf: known)
                    s.alertLog.append(UserSnapshot.AlertLogEntry(day: day, rule: rule, machine: try decodeMachine(&r, rule: rule)))
                }
            }
        }
    }

    /// One chunk of an open day's values (`values`: the day's): the data of a row in `user_days`.
    static func encode(day values: ArraySlice<StoredValue>, chunk: Int) -> [UInt8] {
        let lo = values.startIndex + chunk * StateStore.chunkSize, hi = Swift.min(values.endIndex, lo + StateStore.chunkSize)
        var w = Writer()
        w.bytes.reserveCapacity(4 + (hi - lo) * valueBytes)
        encodeValues(values[lo..<hi], &w)
        return w.bytes
    }

    /// The bytes of one value: its id, value and end (8 bytes each, little endian), metric, provenance.
    static let valueBytes = 26

    /// Writes a count and the values (``valueBytes`` each). The bytes are stored in place in one
    /// grown buffer: three appends of 8 bytes a value were most of a commit's encoding.
    static func encodeValues(_ values: ArraySlice<StoredValue>, _ w: inout Writer) {
        w.i32(Int32(values.count))
        var o = w.bytes.count
        w.bytes.append(contentsOf: repeatElement(0, count: values.count * valueBytes))
        w.bytes.withUnsafeMutableBytes { raw in
            for v in values {
                raw.storeBytes(of: v.id.rawValue.littleEndian, toByteOffset: o, as: UInt64.self)
                raw.storeBytes(of: v.value.bitPattern.littleEndian, toByteOffset: o + 8, as: UInt64.self)
                raw.storeBytes(of: v.end.milliseconds.littleEndian, toByteOffset: o + 16, as: Int64.self)
                raw[o + 24] = v.metric.rawValue
                raw[o + 25] = v.provenance.rawValue
                o += valueBytes
            }
        }
    }

    /// Appends the values of a row written by ``encode(day:chunk:)`` to `values`.
    static func decodeChunk(_ bytes: [UInt8], user: String, into values: inout [StoredValue]) throws(UserStateDecodingError) {
        do {
            var r = Reader(b: bytes)
            try decodeValues(&r, into: &values)
        } catch { throw decodingError(error, user: user) }
    }

    /// The error of a reader's failure, naming the user.
    static func decodingError(_ e: any Error, user: String) -> UserStateDecodingError {
        switch e {
        case let t as Reader.UnknownTag: UserStateDecodingError(user: user, code: .unknownTag(field: t.field, tag: t.tag))
        case is Reader.Inconsistent: UserStateDecodingError(user: user, code: .inconsistent)
        default: UserStateDecodingError(user: user, code: .truncated)
        }
    }

    static func decodeValues(_ r: inout Reader, into values: inout [StoredValue]) throws {
        let n = try r.count()
        values.reserveCapacity(values.count + min(Int(n), (r.b.count - r.i) / 26))  // 26 bytes a value: a bad count cannot reserve more
        for _ in 0..<n {
            let id = SampleID(rawValue: UInt64(bitPattern: try r.i64())), value = try r.f64(), end = try r.i64()
            let m: MetricKind = try r.tag("metric"), p: Provenance = try r.tag("provenance")
            values.append(StoredValue(id: id, metric: m, value: value, end: Timestamp(milliseconds: end), provenance: p))
        }
    }

    static func encode(_ d: UserSnapshot.FoldedInput, _ w: inout Writer) {
        w.u8(d.metric.rawValue)
        w.u8(d.provenance?.rawValue ?? 255)
        w.u8(d.reduction.rawValue)
        if d.reduction == .percentile { w.f64(d.percentile); w.u8(d.method.rawValue) }
    }

    static func decodeInput(_ r: inout Reader) throws -> UserSnapshot.FoldedInput {
        let m: MetricKind = try r.tag("daily input metric")
        let p = try r.u8()
        guard p == 255 || Provenance(rawValue: p) != nil else { throw Reader.UnknownTag(field: "daily input provenance", tag: p) }
        let reduction: UserSnapshot.FoldedInput.Reduction = try r.tag("aggregation")
        var input = UserSnapshot.FoldedInput(metric: m, provenance: p == 255 ? nil : Provenance(rawValue: p), reduction: reduction)
        if reduction == .percentile {
            input.percentile = try r.f64()
            input.method = try r.tag("percentile method")
        }
        return input
    }

    /// Events, alert states and revised days: the same in every format.
    static func encodeTail(_ s: UserSnapshot, _ w: inout Writer) {
        w.i32(Int32(s.events.count))
        for e in s.events {
            w.str(e.id); w.u8(e.category.rawValue); w.str(e.kind); w.i32(e.firstDay); w.i32(e.lastDay); w.str(e.note ?? "")
        }
        w.i32(Int32(s.alerts.count))
        for a in s.alerts {
            w.str(a.rule)
            encode(a.machine, &w)
        }
        w.i32(Int32(s.revisedDays.count))
        for d in s.revisedDays { w.i32(d) }
    }

    /// An alert state machine: its state (a tag and the state's instants), cooldown and last evaluation.
    static func encode(_ sm: AlertStateMachine, _ w: inout Writer) {
        switch sm.state {
        case .inactive: w.u8(0)
        case .pending(let a): w.u8(1); w.i64(a)
        case .firing(let a, let f, let t, let l): w.u8(2); w.i64(a); w.i64(f); w.i64(t); w.i64(l)
        }
        w.i64(sm.quietUntil)
        w.i64(sm.lastEvaluated)
    }

    /// An alert state machine written by ``encode(_:_:)-(AlertStateMachine,_)``.
    static func decodeMachine(_ r: inout Reader, rule name: String) throws -> AlertStateMachine {
        let state: AlertStateMachine.State
        switch try r.u8() {
        case 0: state = .inactive
        case 1: state = .pending(activeSince: try r.i64())
        case 2: state = .firing(activeSince: try r.i64(), firedAt: try r.i64(), lastTrue: try r.i64(), lastSent: try r.i64())
        case let t: throw Reader.UnknownTag(field: "alert state of rule \(name)", tag: t)
        }
        return AlertStateMachine(state: state, quietUntil: try r.i64(), lastEvaluated: try r.i64())
    }

    /// - Parameter known: names to read as these instances when equal (the rules' alert names,
    ///   so that restored states share them instead of holding copies).
    static func decodeTail(_ s: inout UserSnapshot, _ r: inout Reader, alertNames known: [String]) throws {
        let events = try r.count()
        if events > 0 { s.events.reserveCapacity(min(Int(events), r.b.count - r.i)) }
        for _ in 0..<events {
            let id = try r.str(), cat: EventCategory = try r.tag("event category"), kind = try r.str()
            let first = try r.i32(), last = try r.i32(), note = try r.str()
            s.events.append(TimelineEvent(id: id, category: cat, kind: kind, firstDay: first, lastDay: last, note: note.isEmpty ? nil : note))
        }
        for _ in 0..<(try r.count()) {
            let name = try r.str(oneOf: known)
            let sm = try decodeMachine(&r, rule: name)
            if s.alerts.contains(where: { $0.rule == name }) { continue }  // written once per name; a repeat is ignored
            s.alerts.append(UserSnapshot.Alert(rule: name, machine: sm))
        }
        let revised = try r.count()
        if revised > 0 { s.revisedDays.reserveCapacity(min(Int(revised), (r.b.count - r.i) / 4)) }
        for _ in 0..<revised { s.revisedDays.append(try r.i32()) }
    }

    /// Decodes a head written by ``encode(_:withOpenDays:)`` (or by an older format).
    static func decode(user: String, _ bytes: [UInt8], alertNames: [String] = []) throws(UserStateDecodingError) -> UserSnapshot {
        do { return try decodeBlob(user: user, bytes, alertNames: alertNames) } catch { throw decodingError(error, user: user) }
    }

    static func decodeBlob(user: String, _ bytes: [UInt8], alertNames: [String]) throws -> UserSnapshot {
        var r = Reader(b: bytes)
        let first = try r.i32()
        if first != v2Marker && first != v3Marker { return try decodeV1(user: user, bytes, alertNames: alertNames) }
        var s = try decodeHead(user: user, &r)
        if first == v2Marker {
            // Open days inside the blob come back as changed with nothing stored: the next
            // commit writes them as rows.
            for _ in 0..<(try r.count()) {
                let day = try r.i32(), start = s.openValues.count
                try decodeValues(&r, into: &s.openValues)
                s.openDays.append(UserSnapshot.OpenDay(day: day, start: start, count: s.openValues.count - start, changedFrom: 0, storedCount: 0))
            }
        }
        for _ in 0..<(try r.count()) { s.foldedInputs.append(try decodeInput(&r)) }
        let foldedCount = Int(try r.count())
        do {
            // A first pass counts the values, so that the arrays are allocated once.
            var ahead = r, values = 0
            for _ in 0..<foldedCount {
                _ = try ahead.i32()
                let n = UInt64(bitPattern: try ahead.i64()).nonzeroBitCount
                try ahead.skip(8 * n)
                values += n
            }
            s.foldedDays.reserveCapacity(foldedCount)
            s.foldedValues.reserveCapacity(values)
        }
        var previous: DayNumber?
        for _ in 0..<foldedCount {
            let day = try r.i32(), mask = UInt64(bitPattern: try r.i64())
            guard previous.map({ day > $0 }) ?? true else { throw Reader.Inconsistent() }
            previous = day
            for _ in 0..<mask.nonzeroBitCount { s.foldedValues.append(try r.f64()) }
            s.foldedDays.append(UserSnapshot.FoldedDay(day: day, mask: mask))
        }
        let syncCount = try r.count()
        if syncCount > 0 { s.syncIndex.reserveCapacity(min(Int(syncCount), (r.b.count - r.i) / 24)) }
        for _ in 0..<syncCount {
            s.syncIndex.append(
                SyncEntry(
                    sync: SampleID(rawValue: UInt64(bitPattern: try r.i64())), version: try r.i64(),
                    id: SampleID(rawValue: UInt64(bitPattern: try r.i64()))))
        }
        try decodeTail(&s, &r, alertNames: alertNames)
        try decodeSections(&s, &r, alertNames: alertNames)
        return s
    }

    /// Calendar, profile flag, first and last closed day: the same in every format.
    static func decodeHead(user: String, _ r: inout Reader) throws -> UserSnapshot {
        var s = UserSnapshot(user: user)
        s.calendar = try r.str()
        let profile = try r.u8()
        guard profile <= 2 else { throw Reader.UnknownTag(field: "profile flag", tag: profile) }
        s.hasProfile = profile >= 1
        if profile == 2 {
            let n = try r.count()
            guard n <= 64 else { throw Reader.Inconsistent() }  // a profile names at most 8
            for _ in 0..<n { s.careTeams.append(try r.str()) }
        }
        s.firstDay = try r.optI32("first day flag")
        s.lastClosedDay = try r.optI32("last closed day flag")
        return s
    }

    /// The first format (schema v1 blobs): every day raw in buckets of one metric and day, string
    /// ids. Read into open days (changed, nothing stored); the next `advance` folds those past the
    /// allowed lateness.
    static func decodeV1(user: String, _ bytes: [UInt8], alertNames: [String]) throws -> UserSnapshot {
        var r = Reader(b: bytes)
        var s = try decodeHead(user: user, &r)
        var byDay: [DayNumber: [StoredValue]] = [:]
        for _ in 0..<(try r.count()) {
            let m: MetricKind = try r.tag("metric")
            let day = try r.i32()
            for _ in 0..<(try r.count()) {
                let id = try r.str(), value = try r.f64(), end = try r.i64(), p: Provenance = try r.tag("provenance")
                byDay[day, default: []].append(StoredValue(id: SampleID(id), metric: m, value: value, end: Timestamp(milliseconds: end), provenance: p))
            }
        }
        for (day, values) in byDay.sorted(by: { $0.key < $1.key }) {
            s.openDays.append(UserSnapshot.OpenDay(day: day, start: s.openValues.count, count: values.count, changedFrom: 0, storedCount: 0))
            s.openValues += values
        }
        for _ in 0..<(try r.count()) {
            let k = try r.str(), v = try r.i64(), id = try r.str()
            s.syncIndex.append(SyncEntry(sync: SampleID(k), version: v, id: SampleID(id)))
        }
        try decodeTail(&s, &r, alertNames: alertNames)
        return s
    }
}
