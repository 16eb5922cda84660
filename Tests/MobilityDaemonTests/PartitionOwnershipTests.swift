import Testing

@testable import MobilityDaemon

/// The share rule: ⌈P / N⌉ each, the highest given up, free ones claimed.
@Suite struct PartitionOwnershipTests {
    @Test(arguments: [
        (8, [Int](), 1, PartitionOwnership.Action.claim(8)),
        (8, Array(0..<8), 1, .keep),
        (8, Array(0..<8), 2, .release([4, 5, 6, 7])),
        (8, [0, 1, 2, 3], 2, .keep),
        (8, [0, 1, 2, 3], 3, .release([3])),
        (8, [0, 1, 2], 3, .keep),
        (8, [0, 1, 2, 3], 1, .claim(4)),
        (3, [0], 5, .keep),
        (3, [], 5, .claim(1)),
        (8, [], 0, .claim(8))
    ])
    func share(count: Int, held: [Int], live: Int, expected: PartitionOwnership.Action) {
        #expect(PartitionOwnership(count: count).decide(held: held, live: live) == expected)
    }
}
