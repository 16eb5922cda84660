import CLibPQ

/// A statement's result rows, in binary format (the statements cast their columns to the types
/// read here: `bigint`, `integer`, `double precision`, `boolean`, `text`, `bytea` and arrays).
final class PGResult {
    let res: OpaquePointer?

    init(_ res: OpaquePointer?) { self.res = res }
    deinit { if let res { PQclear(res) } }

    /// The rows a statement inserted, updated or deleted.
    var affected: Int { res.flatMap { PQcmdTuples($0) }.flatMap { Int(String(cString: $0)) } ?? 0 }

    /// The number of rows.
    var rows: Int { res.map { Int(PQntuples($0)) } ?? 0 }

    /// Whether a value is NULL.
    func isNull(_ r: Int, _ c: Int) -> Bool { PQgetisnull(res, Int32(r), Int32(c)) == 1 }

    private func value(_ r: Int, _ c: Int) -> UnsafeRawBufferPointer {
        let n = Int(PQgetlength(res, Int32(r), Int32(c)))
        guard n > 0, let p = PQgetvalue(res, Int32(r), Int32(c)) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: UnsafeRawPointer(p), count: n)
    }

    /// A `bigint`.
    func int64(_ r: Int, _ c: Int) -> Int64 {
        let v = value(r, c)
        return v.count == 8 ? PGWire.read(Int64.self, v.baseAddress!) : 0
    }

    /// An `integer`.
    func int32(_ r: Int, _ c: Int) -> Int32 {
        let v = value(r, c)
        return v.count == 4 ? PGWire.read(Int32.self, v.baseAddress!) : 0
    }

    /// A `double precision`.
    func double(_ r: Int, _ c: Int) -> Double { Double(bitPattern: UInt64(bitPattern: int64(r, c))) }

    /// A `boolean`.
    func bool(_ r: Int, _ c: Int) -> Bool { value(r, c).first == 1 }

    /// A `text`.
    func text(_ r: Int, _ c: Int) -> String { String(decoding: value(r, c), as: UTF8.self) }

    /// A `bytea`.
    func bytes(_ r: Int, _ c: Int) -> [UInt8] { Array(value(r, c)) }

    /// The elements of a one-dimensional array (NULL elements as nil), each handed to `body`
    /// while the result is alive.
    func forEachElement(_ r: Int, _ c: Int, _ body: (UnsafeRawBufferPointer?) throws -> Void) rethrows {
        let v = value(r, c)
        guard v.count >= 12, let base = v.baseAddress else { return }
        let dims = PGWire.read(Int32.self, base)
        guard dims == 1, v.count >= 20 else { return }
        let n = Int(PGWire.read(Int32.self, base + 12))
        var i = 20
        for _ in 0..<n {
            guard i + 4 <= v.count else { return }
            let len = Int(PGWire.read(Int32.self, base + i))
            i += 4
            if len < 0 {
                try body(nil)
                continue
            }
            guard i + len <= v.count else { return }
            try body(UnsafeRawBufferPointer(start: base + i, count: len))
            i += len
        }
    }
}
