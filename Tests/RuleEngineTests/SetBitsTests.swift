import EngineTestSupport
import MobilityModel
import TestSupport
import Testing

@testable import RuleEngine

/// The two bit helpers the folded table uses for its columns.
@Suite struct SetBitsTests {
    @Test func setBitsAreVisitedLowestFirstAndRankCountsTheBitsBelow() {
        #expect(Array(UInt64(0).setBits).isEmpty)
        #expect(Array(UInt64(0b1010_0110).setBits) == [0b10, 0b100, 0b10_0000, 0b1000_0000])
        #expect(Array(UInt64.max.setBits).count == 64 && Array(UInt64.max.setBits).last == 1 << 63)
        let m: UInt64 = 0b1010_0110
        #expect(m.setBits.map { m.rank(of: $0) } == [0, 1, 2, 3])
        #expect(m.rank(of: 1) == 0 && m.rank(of: 1 << 63) == 4 && UInt64.max.rank(of: 1 << 63) == 63)
    }

    @Test func matchesANaiveReferenceOnRandomMasks() {
        var rng = SplitMix64(seed: 17)
        for _ in 0..<2000 {
            let m = UInt64.random(in: 0...UInt64.max, using: &rng) & UInt64.random(in: 0...UInt64.max, using: &rng)
            let naive = (0..<64).filter { m & (1 << UInt64($0)) != 0 }.map { UInt64(1) << UInt64($0) }
            #expect(Array(m.setBits) == naive, "seed 17, mask \(m)")
            for (k, bit) in naive.enumerated() { #expect(m.rank(of: bit) == k) }
        }
    }
}
