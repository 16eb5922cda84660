import MobilityWire
import Testing

/// The decoder's lookup of type, unit and metadata-key bytes.
@Suite struct ByteTableTests {
    @Test func byteTableFindsLongKeysThatShareTheirEnds() {
        // Keys of 8+ bytes hash by length and their first and last 8 bytes: keys equal there
        // collide, and must still be told apart by their bytes.
        var entries: [String: Int] = [:]
        for i in 0..<200 { entries["HKQuantityTypeIdentifier\(i)WalkingSpeed"] = i }
        for i in 0..<10 { entries["HKQuantityTypeIdentifierXX\(i)XWalkingSpeed"] = 1000 + i }  // same length and ends
        for k in ["", "a", "m/s", "1234567", "12345678"] { entries[k] = k.count }
        let table = ByteTable(entries)
        for (k, v) in entries {
            var key = k
            #expect(key.withUTF8 { table[utf8: $0] } == v, "\(k)")
        }
        for k in ["HKQuantityTypeIdentifierXX9YWalkingSpeed", "HKQuantityTypeIdentifier200WalkingSpeed", "m/t", "123456789"] {
            var key = k
            #expect(key.withUTF8 { table[utf8: $0] } == nil, "\(k)")
        }
    }
}
