/// Which partitions an instance should hold, as a pure rule: each live instance takes up to its
/// share, ⌈P / N⌉ of P partitions among N live instances, lowest free ones first; one holding
/// more gives the highest up (after it stopped processing them), one holding fewer claims free
/// ones. A rebalance stops and restarts the instance's processing (eager, as Kafka's first
/// protocol): its state is loaded again for the partitions it keeps.
struct PartitionOwnership: Equatable, Sendable {
    /// What to do after a heartbeat.
    enum Action: Equatable, Sendable {
        /// Hold what is held.
        case keep
        /// Give these partitions up (the highest held), then carry on with the rest.
        case release([Int])
        /// Claim up to this many free partitions.
        case claim(Int)
    }

    /// The number of partitions.
    let count: Int

    /// An instance's share among `live` instances.
    func share(live: Int) -> Int { (count + max(1, live) - 1) / max(1, live) }

    /// What an instance holding `held` (ascending) should do among `live` instances.
    func decide(held: [Int], live: Int) -> Action {
        let target = share(live: live)
        if held.count > target { return .release(Array(held.suffix(held.count - target))) }
        if held.count < target { return .claim(target - held.count) }
        return .keep
    }
}
