import MobilityModel
import Testing

/// The one factory of new timeline entry ids (``TimelineEvent/newID(using:)``).
@Suite struct TimelineEventNewIDTests {
    @Test func anIDIsEntryAnd16HexDigitsOfTheGenerator() {
        var g = SplitMix64(seed: 42)
        var copy = g
        let expected = copy.next()
        let id = TimelineEvent.newID(using: &g)
        #expect(id == "entry-" + String(repeating: "0", count: 16 - String(expected, radix: 16).count) + String(expected, radix: 16))
        #expect(id.wholeMatch(of: /entry-[0-9a-f]{16}/) != nil)
    }

    /// Small values keep their leading zeros, so every id has the same length.
    @Test func leadingZerosAreKept() {
        struct Fixed: RandomNumberGenerator {
            var value: UInt64
            mutating func next() -> UInt64 { value }
        }
        var zero = Fixed(value: 0), one = Fixed(value: 1), top = Fixed(value: .max)
        #expect(TimelineEvent.newID(using: &zero) == "entry-0000000000000000")
        #expect(TimelineEvent.newID(using: &one) == "entry-0000000000000001")
        #expect(TimelineEvent.newID(using: &top) == "entry-ffffffffffffffff")
    }

    @Test func systemIDsDiffer() {
        let ids = Set((0..<10_000).map { _ in TimelineEvent.newID() })
        #expect(ids.count == 10_000)
        #expect(ids.allSatisfy { $0.wholeMatch(of: /entry-[0-9a-f]{16}/) != nil })
    }
}
