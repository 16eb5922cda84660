#if canImport(Glibc)
import Glibc
#endif

/// A read-only map from short UTF-8 keys to values, looked up by raw bytes without making a
/// `String` (type identifiers such as `HKQuantityTypeIdentifierWalkingSpeed` are too long for
/// Swift's small-string form, so `String` keys would cost an allocation per sample).
///
/// Open addressing over FNV-1a 64 hashes; the table is built once and never mutated.
public struct ByteTable<Value: Sendable>: Sendable {
    private struct Slot: Sendable {
        var hash: UInt64
        var key: [UInt8]
        var value: Value
    }
    private var slots: [Slot?]
    private let mask: Int

    /// Builds a table from a dictionary.
    public init(_ entries: [String: Value]) {
        var size = 8
        while size < entries.count * 4 { size <<= 1 }
        mask = size - 1
        slots = Array(repeating: nil, count: size)
        for (k, v) in entries {
            let bytes = Array(k.utf8)
            let h = ByteTable.hash(bytes)
            var i = Int(truncatingIfNeeded: h) & mask
            while slots[i] != nil { i = (i + 1) & mask }
            slots[i] = Slot(hash: h, key: bytes, value: v)
        }
    }

    /// The value of the empty key.
    private subscript(empty _: Void) -> Value? {
        let h = ByteTable.hash([UInt8]())
        var i = Int(truncatingIfNeeded: h) & mask
        while let s = slots[i] {
            if s.hash == h, s.key.isEmpty { return s.value }
            i = (i + 1) & mask
        }
        return nil
    }

    @inline(__always)
    static func hash<C: Collection>(_ bytes: C) -> UInt64 where C.Element == UInt8 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return h
    }

    /// The value for a key given as UTF-8 bytes.
    public subscript(utf8 key: UnsafeBufferPointer<UInt8>) -> Value? {
        guard key.baseAddress != nil else { return self[empty: ()] }
        let h = ByteTable.hash(key)
        var i = Int(truncatingIfNeeded: h) & mask
        while let s = slots[i] {
            if s.hash == h, s.key.count == key.count, s.key.withUnsafeBufferPointer({ memcmp($0.baseAddress!, key.baseAddress!, key.count) == 0 }) {
                return s.value
            }
            i = (i + 1) & mask
        }
        return nil
    }
}
