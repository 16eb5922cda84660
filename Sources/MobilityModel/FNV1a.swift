/// FNV-1a, 64-bit: the stable hash behind alert and silence ids, FHIR resource ids, rule-source
/// identities, user fingerprints and the user → shard map. Unlike `Hasher` it is the same in every
/// process and on every run, so its values may be stored, published and compared across processes;
/// changing it changes ids already on disk and on the wire.
package struct FNV1a64: Sendable {
    /// The hash of what was combined so far (the offset basis before anything).
    package var value: UInt64 = 0xcbf2_9ce4_8422_2325

    /// Starts from the offset basis.
    @inlinable package init() {}

    /// Mixes in one byte.
    @inlinable package mutating func combine(_ byte: UInt8) { value = (value ^ UInt64(byte)) &* 0x100_0000_01b3 }

    /// Mixes in a string's UTF-8 bytes.
    @inlinable package mutating func combine(_ s: String) { for b in s.utf8 { combine(b) } }

    /// Mixes in bytes.
    @inlinable package mutating func combine(bytes: some Sequence<UInt8>) { for b in bytes { combine(b) } }

    /// ``value`` in lower-case hex, padded to 16 digits (the form ids use).
    package var paddedHex: String {
        let s = String(value, radix: 16)
        return String(repeating: "0", count: 16 - s.count) + s
    }

    /// The hash of a string's UTF-8 bytes.
    @inlinable package static func hash(_ s: String) -> UInt64 {
        var h = FNV1a64()
        h.combine(s)
        return h.value
    }
}

/// FNV-1a, 32-bit: the user → partition map of instances sharing a PostgreSQL store. Every
/// instance must agree on it, and the partition a user is in is stored, so it never changes.
package enum FNV1a32 {
    /// The hash of a string's UTF-8 bytes.
    package static func hash(_ s: String) -> UInt32 {
        var h: UInt32 = 0x811c_9dc5
        for b in s.utf8 { h = (h ^ UInt32(b)) &* 0x0100_0193 }
        return h
    }
}
