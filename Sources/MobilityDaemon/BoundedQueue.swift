import Foundation

/// A bounded multi-producer, single-consumer queue. `push` blocks while full (back-pressure:
/// the MQTT network thread stops reading, so the broker holds the backlog, not our memory);
/// the consumer waits with `waitForItems` and takes everything queued in one hand-off.
///
/// Sendability: every stored property is read and written only while holding `condition`.
final class BoundedQueue<Element>: @unchecked Sendable {
    private let condition = NSCondition()
    private var items: [Element] = []
    private let capacity: Int
    private var closed = false
    private var waitingConsumer = false
    private var waitingProducers = 0

    init(capacity: Int) {
        self.capacity = capacity
        items.reserveCapacity(min(capacity, 4096))
    }

    /// Appends, waiting while the queue is full. Returns false once the queue is closed.
    ///
    /// The element is moved in, not copied: a `ShardItem` copy retains each of its strings and
    /// arrays (and its destruction releases them): ~0.8 k instructions a one-sample message.
    @discardableResult
    func push(_ x: consuming Element) -> Bool {
        offer(x) == nil
    }

    /// Appends like ``push(_:)``, waiting while the queue is full; once the queue is closed, hands
    /// the element back instead of dropping it.
    func offer(_ x: consuming Element) -> Element? {
        condition.lock()
        defer { condition.unlock() }
        while items.count >= capacity && !closed {
            waitingProducers += 1
            condition.wait()
            waitingProducers -= 1
        }
        guard !closed else { return x }
        items.append(x)
        if waitingConsumer { condition.broadcast() }
        return nil
    }

    /// Appends all of `xs` at once — no other producer's element comes between them, and a take
    /// has either none or all of them — waiting while they do not fit (unless the queue is
    /// empty: more than the capacity at once is taken in whole). False, and nothing appended,
    /// once the queue is closed.
    @discardableResult
    func pushAll(_ xs: consuming [Element]) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while !items.isEmpty && items.count + xs.count > capacity && !closed {
            waitingProducers += 1
            condition.wait()
            waitingProducers -= 1
        }
        guard !closed else { return false }
        items.append(contentsOf: consume xs)
        if waitingConsumer { condition.broadcast() }
        return true
    }

    /// Waits until there is something to take, or for at most `ns` nanoseconds (nil: without
    /// bound; true then, and the take may be empty); false when closed and drained.
    func waitForItems(atMostNs ns: UInt64? = nil) -> Bool {
        let deadline = ns.map { Date(timeIntervalSinceNow: Double($0) / 1e9) }
        condition.lock()
        defer { condition.unlock() }
        while items.isEmpty && !closed {
            waitingConsumer = true
            defer { waitingConsumer = false }
            if let deadline {
                if !condition.wait(until: deadline) { return true }
            } else {
                condition.wait()
            }
        }
        return !items.isEmpty
    }

    /// Takes everything queued now, without waiting, by swapping buffers: `batch` (emptied,
    /// its capacity kept) becomes the queue's storage and the queued items become `batch`.
    /// Returning a copy instead left the queue's buffer shared, so that emptying it allocated a
    /// new one of full capacity (4096 items, ~256 KB) on every hand-off.
    func takeAll(into batch: inout [Element]) {
        batch.removeAll(keepingCapacity: true)
        condition.lock()
        defer { condition.unlock() }
        swap(&items, &batch)
        if waitingProducers > 0 { condition.broadcast() }
    }

    /// Elements waiting now.
    var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return items.count
    }

    /// Refuses further pushes; the consumer drains what is left, then `waitForItems` returns false.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }
}
