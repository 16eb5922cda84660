import Dispatch
import Synchronization

/// Since when each partition session of a run has been without a working broker connection
/// (lost, or refused, and not subscribed again): what tells an instance cut off from its broker,
/// so that it gives its leases up (``PartitionSupervisor``) instead of keeping partitions it
/// cannot consume. A session counts from its first connection event: one that never reported
/// any is not counted.
package final class PartitionLinks: Sendable {
    private struct State {
        var down: [Int: UInt64] = [:]
    }
    private let state = Mutex(State())

    package init() {}

    /// Partition `k`'s session answered its subscription: it consumes.
    package func subscribed(_ k: Int) {
        state.withLock { _ = $0.down.removeValue(forKey: k) }
    }

    /// Partition `k`'s session lost its connection or could not make one, at `now` (uptime, ns).
    package func lost(_ k: Int, now: UInt64 = DispatchTime.now().uptimeNanoseconds) {
        state.withLock { s in if s.down[k] == nil { s.down[k] = now } }
    }

    /// The partitions without a working session for at least `bound` nanoseconds at `now`.
    package func cutOff(for bound: UInt64, now: UInt64 = DispatchTime.now().uptimeNanoseconds) -> [Int] {
        state.withLock { s in s.down.filter { now >= $0.value && now - $0.value >= bound }.map(\.key).sorted() }
    }
}
