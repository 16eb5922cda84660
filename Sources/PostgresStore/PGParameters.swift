/// The parameters of one statement in PostgreSQL's binary format, in one buffer (one allocation
/// however many there are): integers big-endian, text as UTF-8, bytea as is, arrays as
/// ``PGArray``. Every statement casts its parameters (`$1::bigint`), so no types are sent.
struct PGParameters {
    private(set) var bytes: [UInt8] = []
    /// Each parameter's offset in `bytes` and length (-1: NULL).
    private(set) var spans: [(offset: Int, length: Int32)] = []

    /// How many parameters.
    var count: Int { spans.count }

    private mutating func add(_ body: (inout [UInt8]) -> Void) {
        let start = bytes.count
        body(&bytes)
        spans.append((start, Int32(bytes.count - start)))
    }

    /// A `bigint`.
    mutating func int64(_ v: Int64) { add { PGWire.put(v, into: &$0) } }
    /// An `integer`.
    mutating func int32(_ v: Int32) { add { PGWire.put(v, into: &$0) } }
    /// A `double precision`.
    mutating func double(_ v: Double) { add { PGWire.put(Int64(bitPattern: v.bitPattern), into: &$0) } }
    /// A `boolean`.
    mutating func bool(_ v: Bool) { add { $0.append(v ? 1 : 0) } }
    /// A `text` (UTF-8).
    mutating func text(_ s: String) { add { $0.append(contentsOf: s.utf8) } }
    /// A `bytea`.
    mutating func bytea(_ b: [UInt8]) { add { $0.append(contentsOf: b) } }
    /// An array.
    mutating func array(_ a: PGArray) { add { a.write(into: &$0) } }
    /// NULL.
    mutating func null() { spans.append((bytes.count, -1)) }

    /// Calls `body` with libpq's parameter arrays (values, lengths, formats: all binary).
    func withLibPQ<R>(
        _ body: (Int32, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) -> R
    ) -> R {
        bytes.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress)
            // An empty value (a zero-length bytea or text) still needs a non-NULL pointer: NULL is SQL NULL.
            let empty = UnsafeRawPointer(bitPattern: 1)!
            let values: [UnsafePointer<CChar>?] = spans.map { s in
                guard s.length >= 0 else { return nil }
                guard s.length > 0, let base else { return empty.assumingMemoryBound(to: CChar.self) }
                return (base + s.offset).assumingMemoryBound(to: CChar.self)
            }
            let lengths = spans.map { max($0.length, 0) }
            let formats = [Int32](repeating: 1, count: spans.count)
            return values.withUnsafeBufferPointer { v in
                lengths.withUnsafeBufferPointer { l in
                    formats.withUnsafeBufferPointer { f in body(Int32(spans.count), v.baseAddress, l.baseAddress, f.baseAddress) }
                }
            }
        }
    }
}

/// A one-dimensional array parameter in PostgreSQL's binary format: a batch of values sent as one
/// parameter (`unnest($1::text[], …)`), so that a commit of many rows is one statement.
struct PGArray {
    /// The element type's OID.
    let element: UInt32
    private var body: [UInt8] = []
    private(set) var count: Int32 = 0
    private var hasNull = false

    /// The element OIDs used here.
    static let text: UInt32 = 25, int8: UInt32 = 20, int4: UInt32 = 23, float8: UInt32 = 701, bytea: UInt32 = 17, bool: UInt32 = 16

    /// An empty array of `element`.
    init(of element: UInt32, reserving bytes: Int = 0) {
        self.element = element
        body.reserveCapacity(bytes)
    }

    /// Whether it holds no elements.
    var isEmpty: Bool { count == 0 }

    private mutating func element(length: Int, _ write: (inout [UInt8]) -> Void) {
        PGWire.put(Int32(length), into: &body)
        write(&body)
        count += 1
    }

    /// Appends a `bigint`.
    mutating func append(_ v: Int64) { element(length: 8) { PGWire.put(v, into: &$0) } }
    /// Appends an `integer`.
    mutating func append(_ v: Int32) { element(length: 4) { PGWire.put(v, into: &$0) } }
    /// Appends a `double precision`, or NULL.
    mutating func append(double v: Double?) {
        guard let v else { return appendNull() }
        element(length: 8) { PGWire.put(Int64(bitPattern: v.bitPattern), into: &$0) }
    }
    /// Appends a `boolean`.
    mutating func append(_ v: Bool) { element(length: 1) { $0.append(v ? 1 : 0) } }
    /// Appends a `text`.
    mutating func append(_ s: String) { element(length: s.utf8.count) { $0.append(contentsOf: s.utf8) } }
    /// Appends a `bytea`.
    mutating func append(bytes b: [UInt8]) { element(length: b.count) { $0.append(contentsOf: b) } }
    /// Appends NULL.
    mutating func appendNull() {
        PGWire.put(Int32(-1), into: &body)
        count += 1
        hasNull = true
    }

    /// Writes the array (header, then the elements).
    func write(into out: inout [UInt8]) {
        out.reserveCapacity(out.count + 20 + body.count)
        PGWire.put(Int32(count == 0 ? 0 : 1), into: &out)  // dimensions
        PGWire.put(Int32(hasNull ? 1 : 0), into: &out)
        PGWire.put(Int32(bitPattern: element), into: &out)
        if count > 0 {
            PGWire.put(count, into: &out)
            PGWire.put(Int32(1), into: &out)  // lower bound
        }
        out.append(contentsOf: body)
    }
}

/// Big-endian integers, PostgreSQL's binary format.
enum PGWire {
    @inline(__always) static func put<T: FixedWidthInteger>(_ v: T, into out: inout [UInt8]) {
        withUnsafeBytes(of: v.bigEndian) { out.append(contentsOf: $0) }
    }

    @inline(__always) static func read<T: FixedWidthInteger>(_: T.Type, _ p: UnsafeRawPointer) -> T {
        T(bigEndian: p.loadUnaligned(as: T.self))
    }
}
