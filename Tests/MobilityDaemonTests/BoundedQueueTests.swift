import Dispatch
import Synchronization
import Testing

@testable import MobilityDaemon

/// The shards' queue: several producers, one consumer taking everything queued at once.
@Suite struct BoundedQueueTests {
    /// Hand-offs pushed at once by producers racing each other arrive whole and in their own
    /// order: no other producer's element comes between a hand-off's, and a take has all of a
    /// hand-off or none of it (a shard commits a partition's messages only with the waiter that
    /// ends its hand-off).
    @Test func aHandOffPushedAtOnceIsNeverInterleavedNorSplitByATake() {
        let queue = BoundedQueue<(producer: Int, index: Int, of: Int)>(capacity: 64)
        let producers = 4, handOffs = 300
        let group = DispatchGroup()
        let refused = Atomic<Int>(0)
        for p in 0..<producers {
            DispatchQueue.global().async(group: group) {
                for h in 0..<handOffs {
                    let size = 1 + (h * 7 + p) % 40
                    if !queue.pushAll((0..<size).map { (p, $0, size) }) { refused.add(1, ordering: .relaxed) }
                }
            }
        }
        group.notify(queue: .global()) { queue.close() }
        var taken: [(producer: Int, index: Int, of: Int)] = []
        var received = 0
        var expectedNext = [Int](repeating: 0, count: producers)
        while queue.waitForItems() {
            queue.takeAll(into: &taken)
            var i = 0
            while i < taken.count {
                let first = taken[i]
                #expect(first.index == 0, "a take starts inside a hand-off: \(first)")
                #expect(i + first.of <= taken.count, "a hand-off of \(first.of) split by a take")
                for k in 0..<min(first.of, taken.count - i) {
                    let e = taken[i + k]
                    #expect(e.producer == first.producer && e.index == k, "another producer's element inside a hand-off: \(e)")
                }
                #expect(first.of == 1 + (expectedNext[first.producer] * 7 + first.producer) % 40, "hand-offs out of order")
                expectedNext[first.producer] += 1
                received += 1
                i += first.of
            }
        }
        #expect(refused.load(ordering: .relaxed) == 0)
        #expect(received == producers * handOffs && expectedNext.allSatisfy { $0 == handOffs })
    }

    /// More than the capacity at once goes into an empty queue whole; once closed, nothing is appended.
    @Test func aHandOffLargerThanTheCapacityGoesInWholeAndNothingAfterClosing() {
        let queue = BoundedQueue<Int>(capacity: 4)
        #expect(queue.pushAll(Array(0..<10)))
        #expect(queue.count == 10)
        var taken: [Int] = []
        queue.takeAll(into: &taken)
        #expect(taken == Array(0..<10))
        queue.close()
        #expect(!queue.pushAll([1, 2]))
        #expect(queue.count == 0)
    }
}
