import MobilityModel
import Testing

/// The stable hash's values are stored and published (ids, partitions): they are the published
/// FNV-1a test vectors, whatever the platform.
@Suite struct FNV1aTests {
    @Test(arguments: [("", 0xcbf2_9ce4_8422_2325 as UInt64), ("a", 0xaf63_dc4c_8601_ec8c), ("foobar", 0x8594_4171_f739_67e8)])
    func sixtyFourBitMatchesTheReferenceVectors(text: String, expected: UInt64) {
        #expect(FNV1a64.hash(text) == expected)
        var h = FNV1a64()
        h.combine(bytes: Array(text.utf8))
        #expect(h.value == expected)
        #expect(h.paddedHex.count == 16 && UInt64(h.paddedHex, radix: 16) == expected)
    }

    @Test(arguments: [("", 0x811c_9dc5 as UInt32), ("a", 0xe40c_292c), ("foobar", 0xbf9c_f968)])
    func thirtyTwoBitMatchesTheReferenceVectors(text: String, expected: UInt32) {
        #expect(FNV1a32.hash(text) == expected)
    }
}
