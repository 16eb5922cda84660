import EngineTestSupport
import Testing

@testable import RuleEngine

/// Sample ids are kept as 64-bit hashes, which the state store writes: the hash must never change.
@Suite struct SampleIDTests {
    @Test func theHashIsStable() {
        // Golden values: a change here makes every stored id unrecognisable (re-deliveries accepted twice).
        #expect(SampleID("").rawValue == 0x9CA066F1A4AB2EEA)
        #expect(SampleID("a").rawValue == 0x82D191BCF43CBA02)
        #expect(SampleID("6F1B2C1E-4A7D-4C55-9E0B-6A3E1C2D9F00").rawValue == 0x6754C6F78E41C59E)
    }

    @Test func everyLengthAndEveryByteMatters() {
        // Lengths around the 8-byte words, and ids that differ only in their last byte or their length.
        var seen = Set<UInt64>()
        for n in 0..<40 {
            let base = String(repeating: "x", count: n)
            for last in ["a", "b", "\u{0}"] { seen.insert(SampleID(base + last).rawValue) }
        }
        #expect(seen.count == 40 * 3)
        #expect(SampleID("id") == SampleID("id") && SampleID("id") != SampleID("di"))
    }
}
