import MobilityModel

#if canImport(Glibc)
    import Glibc
#endif

/// A read-only map from short UTF-8 keys to values, looked up by raw bytes without making a
/// `String` (type identifiers such as `HKQuantityTypeIdentifierWalkingSpeed` are too long for
/// Swift's small-string form, so `String` keys would cost an allocation per sample).
///
/// Open addressing over FNV-1a 64 hashes; the table is built once and never mutated.
package struct ByteTable<Value: Sendable>: Sendable {
    private struct Slot: Sendable {
        var hash: UInt64
        var key: [UInt8]
        var value: Value
    }
    private var slots: [Slot?]
    private let mask: Int

    /// Builds a table from a dictionary.
    package init(_ entries: [String: Value]) {
        var size = 8
        while size < entries.count * 4 { size <<= 1 }
        mask = size - 1
        slots = Array(repeating: nil, count: size)
        for (k, v) in entries {
            let bytes = Array(k.utf8)
            let h = bytes.withUnsafeBufferPointer { ByteTable.hash($0) }
            var i = Int(truncatingIfNeeded: h) & mask
            while slots[i] != nil { i = (i + 1) & mask }
            slots[i] = Slot(hash: h, key: bytes, value: v)
        }
    }

    /// The value of the empty key.
    private subscript(empty _: Void) -> Value? {
        let h = ByteTable.hash(UnsafeBufferPointer(start: nil, count: 0))
        var i = Int(truncatingIfNeeded: h) & mask
        while let s = slots[i] {
            if s.hash == h, s.key.isEmpty { return s.value }
            i = (i + 1) & mask
        }
        return nil
    }

    /// The length and the first and last 8 bytes, mixed (keys of 8 bytes or more: HealthKit's
    /// identifiers share long prefixes but differ at the end); FNV-1a for shorter keys. A byte at
    /// a time, FNV-1a over a 36-byte type identifier was 7 % of decoding a sample.
    @inline(__always)
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        let n = bytes.count
        guard n >= 8, let base = bytes.baseAddress else {
            var h = FNV1a64()
            h.combine(bytes: bytes)
            return h.value
        }
        let raw = UnsafeRawPointer(base)
        let head = raw.loadUnaligned(as: UInt64.self), tail = raw.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)
        var h = head &* 0x9E37_79B9_7F4A_7C15 ^ (tail &+ UInt64(n)) &* 0xC2B2_AE3D_27D4_EB4F
        h ^= h >> 29
        h = h &* 0xBF58_476D_1CE4_E5B9
        return h ^ (h >> 32)
    }

    /// The value for a key given as UTF-8 bytes.
    package subscript(utf8 key: UnsafeBufferPointer<UInt8>) -> Value? {
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
