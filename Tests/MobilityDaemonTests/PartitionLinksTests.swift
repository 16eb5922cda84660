import Testing

@testable import MobilityDaemon

/// Which partition sessions have been without a broker for how long.
@Suite struct PartitionLinksTests {
    @Test func aSessionCountsFromItsLossUntilItSubscribesAgain() {
        let links = PartitionLinks()
        let s: UInt64 = 1_000_000_000
        #expect(links.cutOff(for: 2 * s, now: 10 * s).isEmpty)  // no event yet: not counted
        links.lost(3, now: 10 * s)
        links.lost(3, now: 11 * s)  // still the first loss
        links.lost(1, now: 11 * s)
        #expect(links.cutOff(for: 2 * s, now: 11 * s).isEmpty)
        #expect(links.cutOff(for: 2 * s, now: 12 * s) == [3])
        #expect(links.cutOff(for: 2 * s, now: 13 * s) == [1, 3])
        links.subscribed(3)
        #expect(links.cutOff(for: 2 * s, now: 13 * s) == [1])
        links.lost(3, now: 14 * s)
        #expect(links.cutOff(for: 2 * s, now: 15 * s) == [1])
    }
}
