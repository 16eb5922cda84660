import Foundation
import MobilityModel
import MobilityWire
import Synchronization

/// A pipeline stage between the MQTT network thread and the shards: a thread of its own decodes
/// large `samples` payloads (simdjson and building the ``Sample``s: pure, independent of engine
/// state) and hands the decoded message to its user's shard, so that a shard busy with a backfill
/// spends its time in the engine, not in the decoder.
///
/// Nothing is reordered. The router sends a message through the stage when it is a `samples`
/// message of at least ``threshold`` bytes, or while the stage still holds anything; everything
/// else goes straight to the shard's queue, as without the stage. Items are counted in flight
/// from before they enter the stage until after the stage pushed them to their shard, so an item
/// that goes straight to a shard finds every earlier one in the shard's queue already. Other
/// producers whose item must follow the messages routed before it (acknowledgement commands,
/// oversized rejections, wall-clock ticks, rule reloads) use ``deliver(_:to:)``, the same rule.
///
/// The journal's queued mark (`markQueued`, which a shard reads before taking a batch to know
/// what it may release after its commit) only ever covers messages already in a shard's queue:
/// for a message that goes straight to its shard the router sets it after the push, which
/// happens only when the stage is empty; for one through the stage the stage sets it after its
/// push and before the message leaves the in-flight count. Sequence numbers grow, and the stage
/// is first in, first out, so the mark never goes back.
///
/// Sendability: `thread` is written only in `start` (before any other thread uses the stage);
/// the queues and the in-flight count are thread-safe; the decoder and the batch are used only
/// by the stage's thread.
final class DecodeStage: Service, @unchecked Sendable {
    let name = "decode stage"
    /// A `samples` payload of at least this many bytes is decoded by the stage (2 KiB: about
    /// eight samples; a one-sample message gains nothing from an extra hand-off).
    static let defaultThreshold = 2048
    /// The most shards one stage serves. Decoding is about a third of a shard's work on a
    /// backfill, so one stage thread keeps up with two shards; with more, the stage would be
    /// their bottleneck, and the shards decode for themselves (as without the stage).
    static let maxShards = 2

    /// The threshold the daemon uses with `shards` shards: ``defaultThreshold`` up to
    /// ``maxShards``, else none (`Int.max`: every item goes straight to its shard).
    static func threshold(shards: Int) -> Int { shards <= maxShards ? defaultThreshold : Int.max }

    /// What waits in the stage: an item and the shard it goes to.
    private struct Entry {
        var shard: Int
        var item: ShardItem
    }

    private let queue: BoundedQueue<Entry>
    private let shards: [BoundedQueue<ShardItem>]
    private let decoder: WireDecoder
    private let threshold: Int
    private let markQueued: @Sendable (UInt64) -> Void
    /// Items given to the stage and not yet in their shard's queue.
    private let inFlight = Atomic<Int>(0)
    private let finished = DispatchSemaphore(value: 0)
    private var thread: Thread?

    /// - Parameters:
    ///   - shards: the shards' queues, by shard index.
    ///   - decoder: the decoder with the limits of the shards' ingestors (the same rejections).
    ///   - capacity: how many items the stage holds before the router waits (back-pressure).
    ///   - markQueued: the journal's mark: every journalled message up to this sequence number
    ///     is in a shard's queue.
    init(
        shards: [BoundedQueue<ShardItem>], decoder: WireDecoder, capacity: Int, threshold: Int = DecodeStage.defaultThreshold,
        markQueued: @escaping @Sendable (UInt64) -> Void
    ) {
        self.queue = BoundedQueue(capacity: capacity)
        self.shards = shards
        self.decoder = decoder
        self.threshold = threshold
        self.markQueued = markQueued
    }

    /// Items in the stage: queued or being decoded (the `mobilityd_queue_depth{stage="decode"}` gauge).
    var depth: Int { inFlight.load(ordering: .relaxed) }

    /// Routes a journalled message (`seq` > 0) to shard `shard`: decoded by the stage when it is a
    /// large `samples` message or the stage is busy, else straight to the shard. Either way the
    /// journal's queued mark covers it once it is in the shard's queue.
    func route(seq: UInt64, topic: String, parsed: TopicLayout.Parsed, payload: [UInt8], to shard: Int) {
        let item = ShardItem.message(seq: seq, topic: topic, parsed: parsed, payload: payload)
        if inFlight.load(ordering: .acquiring) == 0 {
            guard payload.count >= threshold, case .inbound(_, .samples) = parsed else {
                shards[shard].push(item)
                markQueued(seq)
                return
            }
        }
        enter(Entry(shard: shard, item: item))
    }

    /// Hands `item` to shard `shard` after everything routed before it: through the stage while
    /// it holds anything, else straight to the shard's queue.
    func deliver(_ item: consuming ShardItem, to shard: Int) {
        if inFlight.load(ordering: .acquiring) == 0 {
            shards[shard].push(item)
        } else {
            enter(Entry(shard: shard, item: item))
        }
    }

    private func enter(_ e: consuming Entry) {
        inFlight.add(1, ordering: .relaxed)
        if let refused = queue.offer(e) {
            // Stopped (only at shutdown, after the subscriber): straight to the shard once the
            // stage's thread has handed over everything it held.
            waitUntilFinished()
            pass(refused)
        }
    }

    func start() {
        let t = ThreadName.thread("decode") { [self] in run() }
        thread = t
        t.start()
    }

    /// Stops taking items and waits until the thread has handed everything it held to the shards.
    func stop() {
        queue.close()
        waitUntilFinished()
    }

    /// Waits until the thread (if started) has drained the closed queue and ended.
    private func waitUntilFinished() {
        guard thread != nil else { return }
        finished.wait()
        finished.signal()  // for the next caller
    }

    private func run() {
        var batch: [Entry] = []
        batch.reserveCapacity(1024)
        while queue.waitForItems() {
            queue.takeAll(into: &batch)
            for k in batch.indices {
                // Moved out of the batch, so the payload's buffer is freed once decoded.
                var e = Entry(shard: batch[k].shard, item: .housekeeping)
                swap(&e.item, &batch[k].item)
                if case .message(let seq, let topic, .inbound(let user, .samples), let payload) = e.item {
                    e.item = .decodedSamples(seq: seq, topic: topic, user: user, samples: decoder.samples(payload, user: user))
                }
                pass(e)
            }
        }
        finished.signal()
    }

    /// Pushes an entry of the stage to its shard, marks a journalled message queued, then takes
    /// it out of the in-flight count (in this order: see the type's summary).
    private func pass(_ e: consuming Entry) {
        let seq: UInt64
        switch e.item {
        case .message(let s, _, _, _), .decodedSamples(let s, _, _, _): seq = s
        default: seq = 0
        }
        shards[e.shard].push(e.item)
        if seq > 0 { markQueued(seq) }
        inFlight.subtract(1, ordering: .releasing)
    }
}
