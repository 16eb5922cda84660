/// How one column of the folded table stores its values, losslessly: whole numbers 0…254 in one
/// byte, 0…65 534 in two, anything else as the `Double` itself (8 bytes). A cell of all-ones bytes
/// holds no value in every width (0xFF, 0xFFFF, and a NaN), so an empty row is `0xFF` bytes.
///
/// Counts of samples (`count(...)`, the most common daily input after the percentile) are small
/// whole numbers, so their columns take 1 byte a day instead of 8. A column starts in the narrowest
/// width its first value fits and widens, rewriting the table once, when a value does not fit
/// exactly (e.g. 1.5, 255, −1 or −0.0 in a one-byte column): no value is ever rounded.
enum FoldedCell: UInt8, Comparable, Sendable {
    /// One byte: 0…254 (0xFF: no value).
    case byte = 1
    /// Two bytes, little-endian: 0…65 534 (0xFFFF: no value).
    case short = 2
    /// Eight bytes: the value's bit pattern (a NaN: no value).
    case wide = 8

    /// The cell's size in bytes.
    @inline(__always) var size: Int { Int(rawValue) }

    /// Orders widths by size.
    static func < (a: FoldedCell, b: FoldedCell) -> Bool { a.rawValue < b.rawValue }

    /// The narrowest width that holds `v` exactly: a whole, non-negative number with a positive
    /// sign (so that −0.0 keeps its sign) fits in one or two bytes; NaN and everything else is wide.
    @inline(__always) static func narrowest(for v: Double) -> FoldedCell {
        guard v >= 0, v <= 65_534 else { return .wide }  // NaN too
        let u = UInt16(v)  // toward zero (one instruction; `rounded` is a libm call on x86-64's baseline)
        guard Double(u) == v, v.sign == .plus else { return .wide }
        return u <= 254 ? .byte : .short
    }

    /// The value at `p` (nil: the cell holds none).
    @inline(__always) func load(_ p: UnsafeRawPointer) -> Double? {
        switch self {
        case .byte:
            let b = p.load(as: UInt8.self)
            return b == 0xFF ? nil : Double(b)
        case .short:
            let s = UInt16(littleEndian: p.loadUnaligned(as: UInt16.self))
            return s == 0xFFFF ? nil : Double(s)
        case .wide:
            let v = Double(bitPattern: UInt64(littleEndian: p.loadUnaligned(as: UInt64.self)))
            return v.isNaN ? nil : v
        }
    }

    /// Writes `v` (nil: no value) at `p`; `v` must fit this width (``narrowest(for:)`` ≤ self).
    @inline(__always) func store(_ v: Double?, _ p: UnsafeMutableRawPointer) {
        switch self {
        case .byte: p.storeBytes(of: v.map { UInt8($0) } ?? 0xFF, as: UInt8.self)
        case .short: p.storeBytes(of: (v.map { UInt16($0) } ?? 0xFFFF).littleEndian, as: UInt16.self)
        case .wide: p.storeBytes(of: (v ?? Double(bitPattern: ~0)).bitPattern.littleEndian, as: UInt64.self)
        }
    }
}
