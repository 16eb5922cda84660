import MobilityModel

/// The partitions of users an instance owns: `count` fixed partitions in all, `owned` those this
/// instance holds (and commits for, fenced by their tokens). One partition (``all``) unless the
/// broker partitions traffic (`--partitions`: the mapping of users to partitions is then the
/// broker's, NATS's `partition(P, 1)`; docs/scaling.md).
package struct PartitionSet: Sendable, Hashable {
    /// The number of partitions users are divided into.
    package let count: Int
    /// The partitions owned, ascending.
    package let owned: [Int]

    /// Every user in one partition, owned here.
    package static let all = PartitionSet(count: 1, owned: [0])

    /// `owned` of `count` partitions (each in 0..<count).
    package init(count: Int, owned: [Int]) {
        precondition(count >= 1 && !owned.isEmpty && owned.allSatisfy { (0..<count).contains($0) }, "partitions out of range")
        self.count = count
        self.owned = Array(Set(owned)).sorted()
    }

    /// The partition of a user: FNV-1a (32-bit) of the id, modulo the count.
    package func partition(of user: String) -> Int {
        guard count > 1 else { return 0 }
        return Int(FNV1a32.hash(user) % UInt32(count))
    }
}
