/// A sample id as the engine keeps it: a 64-bit hash of its UTF-8 bytes (8 bytes at a time,
/// multiply-xorshift per word, MurmurHash3's 64-bit finaliser; stable across runs and machines). Ids are used only to
/// recognise re-deliveries, deletions and superseded versions within the allowed lateness, where a
/// user has at most thousands of ids (a collision needs ~2^32 of them); 8 bytes instead of a heap
/// string (HealthKit UUIDs are 36 characters).
package struct SampleID: Hashable, Comparable, Sendable {
    /// The hash.
    package var rawValue: UInt64

    /// Wraps a stored hash.
    package init(rawValue: UInt64) { self.rawValue = rawValue }

    /// The id of a sample id string.
    package init(_ id: String) {
        var s = id
        rawValue = s.withUTF8 { SampleID.hash($0) }
    }

    /// The hash of UTF-8 bytes.
    package static func hash(_ b: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var h: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(b.count)
        guard let base = b.baseAddress else { return fmix(h) }
        let raw = UnsafeRawPointer(base)
        var i = 0
        while i + 8 <= b.count {
            h = (h ^ UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: i, as: UInt64.self))) &* 0xBF58_476D_1CE4_E5B9
            h ^= h >> 31
            i += 8
        }
        if i < b.count {
            var w: UInt64 = 0
            var shift: UInt64 = 0
            while i < b.count { w |= UInt64(b[i]) << shift; shift += 8; i += 1 }
            h = (h ^ w) &* 0x94D0_49BB_1331_11EB
            h ^= h >> 29
        }
        return fmix(h)
    }

    @inline(__always) static func fmix(_ x: UInt64) -> UInt64 {
        var k = x
        k ^= k >> 33
        k = k &* 0xFF51_AFD7_ED55_8CCD
        k ^= k >> 33
        k = k &* 0xC4CE_B9FE_1A85_EC53
        k ^= k >> 33
        return k
    }

    /// Orders by hash (a tie-break only: the order means nothing else).
    package static func < (a: SampleID, b: SampleID) -> Bool { a.rawValue < b.rawValue }
}
