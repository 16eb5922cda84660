import MobilityModel
import RuleEngine

/// A compact binary encoding of a user's engine state (versioned by the store's schema).
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
        mutating func u8() throws -> UInt8 { guard i < b.count else { throw Truncated() }; defer { i += 1 }; return b[i] }
        mutating func i32() throws -> Int32 {
            guard i + 4 <= b.count else { throw Truncated() }
            var v: UInt32 = 0
            for k in 0..<4 { v |= UInt32(b[i + k]) << (8 * k) }
            i += 4
            return Int32(bitPattern: v)
        }
        mutating func i64() throws -> Int64 {
            guard i + 8 <= b.count else { throw Truncated() }
            var v: UInt64 = 0
            for k in 0..<8 { v |= UInt64(b[i + k]) << (8 * k) }
            i += 8
            return Int64(bitPattern: v)
        }
        mutating func f64() throws -> Double { Double(bitPattern: UInt64(bitPattern: try i64())) }
        mutating func str() throws -> String {
            let n = Int(try i32())
            guard n >= 0, i + n <= b.count else { throw Truncated() }
            defer { i += n }
            return String(decoding: b[i..<(i + n)], as: UTF8.self)
        }
        mutating func optI32() throws -> Int32? { let has = try u8(); let v = try i32(); return has == 1 ? v : nil }
    }

    static func encode(_ s: UserState) -> [UInt8] {
        var w = Writer()
        w.str(s.calendar.identifier)
        w.u8(s.hasProfile ? 1 : 0)
        w.optI32(s.firstDay)
        w.optI32(s.lastClosedDay)
        let keys = s.buckets.keys.sorted { ($0.day, $0.metric.rawValue) < ($1.day, $1.metric.rawValue) }
        w.i32(Int32(keys.count))
        for k in keys {
            w.u8(k.metric.rawValue)
            w.i32(k.day)
            let vs = s.buckets[k]!
            w.i32(Int32(vs.count))
            for v in vs { w.str(v.id); w.f64(v.value); w.i64(v.end.milliseconds); w.u8(v.provenance.rawValue) }
        }
        w.i32(Int32(s.syncIndex.count))
        for (k, v) in s.syncIndex.sorted(by: { $0.key < $1.key }) { w.str(k); w.i64(v.version); w.str(v.id) }
        w.i32(Int32(s.events.count))
        for e in s.events.values.sorted(by: { $0.id < $1.id }) {
            w.str(e.id); w.u8(e.category.rawValue); w.str(e.kind); w.i32(e.firstDay); w.i32(e.lastDay); w.str(e.note ?? "")
        }
        w.i32(Int32(s.alerts.count))
        for (name, sm) in s.alerts.sorted(by: { $0.key < $1.key }) {
            w.str(name)
            switch sm.state {
            case .inactive: w.u8(0)
            case .pending(let a): w.u8(1); w.i64(a)
            case .firing(let a, let f, let t, let l): w.u8(2); w.i64(a); w.i64(f); w.i64(t); w.i64(l)
            }
            w.i64(sm.quietUntil)
            w.i64(sm.lastEvaluated)
        }
        let revised = s.revisedDays.sorted()
        w.i32(Int32(revised.count))
        for d in revised { w.i32(d) }
        return w.bytes
    }

    static func decode(user: String, _ bytes: [UInt8]) throws -> UserState {
        var r = Reader(b: bytes)
        let cal = LocalCalendar.cached(try r.str()) ?? .utc
        var s = UserState(user: user, calendar: cal)
        s.hasProfile = try r.u8() == 1
        s.firstDay = try r.optI32()
        s.lastClosedDay = try r.optI32()
        for _ in 0..<(try r.i32()) {
            guard let m = MetricKind(rawValue: try r.u8()) else { throw Reader.Truncated() }
            let key = UserState.BucketKey(metric: m, day: try r.i32())
            var vs: [StoredValue] = []
            for _ in 0..<(try r.i32()) {
                let id = try r.str(), value = try r.f64(), end = try r.i64()
                vs.append(StoredValue(id: id, value: value, end: Timestamp(milliseconds: end), provenance: Provenance(rawValue: try r.u8()) ?? .device))
                s.sampleIndex[id] = key
            }
            s.buckets[key] = vs
        }
        for _ in 0..<(try r.i32()) { let k = try r.str(); let v = try r.i64(); s.syncIndex[k] = (v, try r.str()) }
        for _ in 0..<(try r.i32()) {
            let id = try r.str(), cat = EventCategory(rawValue: try r.u8()) ?? .annotation, kind = try r.str()
            let first = try r.i32(), last = try r.i32(), note = try r.str()
            s.events[id] = TimelineEvent(id: id, category: cat, kind: kind, firstDay: first, lastDay: last, note: note.isEmpty ? nil : note)
        }
        s.rebuildBoundaries()
        for _ in 0..<(try r.i32()) {
            let name = try r.str()
            let state: AlertStateMachine.State
            switch try r.u8() {
            case 0: state = .inactive
            case 1: state = .pending(activeSince: try r.i64())
            default: state = .firing(activeSince: try r.i64(), firedAt: try r.i64(), lastTrue: try r.i64(), lastSent: try r.i64())
            }
            s.alerts[name] = AlertStateMachine(state: state, quietUntil: try r.i64(), lastEvaluated: try r.i64())
        }
        for _ in 0..<(try r.i32()) { s.revisedDays.insert(try r.i32()) }
        return s
    }
}
