import CSQLite
import MobilityModel

/// A user and a local day: the key of a packed series row.
struct UserDay: Hashable {
    var user: String
    var day: DayNumber
}

/// One user-day's series values, packed: a count (u16), then per point a series id (u32, little
/// endian), a flag (0 missing, 1 value) and, with a value, its 8 bytes (IEEE 754, little endian).
struct SeriesDay {
    private(set) var points: [(id: Int64, value: Double?)] = []

    init() {}

    /// An empty row with room for `capacity` points.
    init(capacity: Int) { points.reserveCapacity(capacity) }

    /// Reads trusted bytes (written by this store in the same transaction's read).
    init(_ bytes: [UInt8]) { self = SeriesDay(validating: bytes) ?? SeriesDay() }

    /// Reads trusted bytes in place (a row as the store holds it; malformed bytes read as an empty row, as ``init(_:)``).
    init(trusted b: UnsafeRawBufferPointer) {
        var points: [(id: Int64, value: Double?)] = []
        points.reserveCapacity(b.count / 5)
        if SeriesDay.visit(b, { points.append(($0, $1)) }) { self.points = points }
    }

    /// Reads bytes; nil if they are not a well-formed row.
    init?(validating b: [UInt8]) {
        var points: [(id: Int64, value: Double?)] = []
        let ok = b.withUnsafeBytes { raw in SeriesDay.visit(raw) { points.append(($0, $1)) } }
        guard ok else { return nil }
        self.points = points
    }

    /// Calls `body` with each point of a row's bytes, in order, without building the row; false
    /// (after calling it for the points before) if the bytes are not a well-formed row.
    static func visit(_ b: UnsafeRawBufferPointer, _ body: (Int64, Double?) -> Void) -> Bool {
        guard b.count >= 2 else { return false }
        let n = Int(b[0]) | Int(b[1]) << 8
        var i = 2
        for _ in 0..<n {
            guard i + 5 <= b.count else { return false }
            var id: UInt32 = 0
            for k in 0..<4 { id |= UInt32(b[i + k]) << (8 * k) }
            let flag = b[i + 4]
            i += 5
            switch flag {
            case 0: body(Int64(id), nil)
            case 1:
                guard i + 8 <= b.count else { return false }
                var bits: UInt64 = 0
                for k in 0..<8 { bits |= UInt64(b[i + k]) << (8 * k) }
                body(Int64(id), Double(bitPattern: bits))
                i += 8
            default: return false
            }
        }
        return i == b.count
    }

    /// Sets a series' value (replacing an earlier one: a revised day).
    mutating func set(_ id: Int64, _ value: Double?) {
        if let k = points.firstIndex(where: { $0.id == id }) { points[k].value = value } else { points.append((id, value)) }
    }

    /// The row's bytes.
    var bytes: [UInt8] {
        let size = points.reduce(2) { $0 + ($1.value == nil ? 5 : 13) }
        precondition(points.count <= Int(UInt16.max), "a series row holds at most 65 535 points")  // as the format's 16-bit count
        return [UInt8](unsafeUninitializedCapacity: size) { b, count in
            let raw = UnsafeMutableRawBufferPointer(b)
            raw.storeBytes(of: UInt16(truncatingIfNeeded: points.count).littleEndian, toByteOffset: 0, as: UInt16.self)
            var i = 2
            for p in points {
                raw.storeBytes(of: UInt32(truncatingIfNeeded: p.id).littleEndian, toByteOffset: i, as: UInt32.self)
                if let v = p.value {
                    raw[i + 4] = 1
                    raw.storeBytes(of: v.bitPattern.littleEndian, toByteOffset: i + 5, as: UInt64.self)
                    i += 13
                } else {
                    raw[i + 4] = 0
                    i += 5
                }
            }
            count = i
        }
    }
}

/// A history read's series points gathered by series id, in the order the ids first appear.
struct SeriesSlots {
    /// The series ids seen.
    private(set) var ids: [Int64] = []
    /// Each id's points (same index as ``ids``).
    private(set) var points: [[(day: DayNumber, value: Double?)]] = []
    /// Slot of a small id (its index in ``ids``, -1 none); larger ids go through `other`.
    private var small: [Int32] = []
    private var other: [Int64: Int] = [:]

    /// Adds a point of series `id`.
    mutating func append(_ id: Int64, _ day: DayNumber, _ value: Double?) {
        let slot: Int
        if id >= 0, id < 4096 {
            let i = Int(id)
            if i >= small.count { small.append(contentsOf: repeatElement(-1, count: i + 1 - small.count)) }
            if small[i] < 0 {
                small[i] = Int32(ids.count)
                ids.append(id)
                points.append([])
                points[points.count - 1].reserveCapacity(32)  // a digest reads a few weeks of days
            }
            slot = Int(small[i])
        } else if let known = other[id] {
            slot = known
        } else {
            slot = ids.count
            other[id] = slot
            ids.append(id)
            points.append([])
        }
        points[slot].append((day, value))
    }
}

/// The commit path's cache of series ids (a series keeps its id for the store's life).
struct SeriesIDs: Sendable {
    var ids: [String: Int64] = [:]
}
