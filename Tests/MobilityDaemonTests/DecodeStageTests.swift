import Dispatch
import MobilityModel
import MobilityWire
import Synchronization
import TestSupport
import Testing

@testable import MobilityDaemon

/// The decode stage on its own: what it decodes, that nothing overtakes an item in the stage,
/// and that the journal's queued mark only covers messages already in a shard's queue.
@Suite struct DecodeStageTests {
    let layout = TopicLayout(root: "mobility/v1")

    /// A samples payload of `n` samples (about 190 bytes each).
    func big(_ tag: String, _ n: Int = 20) -> [UInt8] {
        Array(
            ("["
                + (0..<n).map { j in sampleJSON(id: "\(tag)-\(j)", value: 1.2, end: "2026-03-01T10:00:\(String(format: "%02d", j % 60))Z") }
                .joined(separator: ",") + "]").utf8)
    }

    /// What a shard's queue received, in order: `m<seq>` an undecoded message, `d<seq>` a decoded
    /// samples message, `tick`, `other`.
    func names(_ items: [ShardItem]) -> [String] {
        items.map { item in
            switch item {
            case .message(let seq, _, _, _): "m\(seq)"
            case .decodedSamples(let seq, _, _, _): "d\(seq)"
            case .tick: "tick"
            default: "other"
            }
        }
    }

    /// Each call of the stage's `markQueued`, with how many items its shard's queue held then.
    final class Marks: Sendable {
        let calls = Mutex<[(seq: UInt64, queued: Int)]>([])
        /// Held until signalled when the stage marks `holdAt` (nil: never held).
        let hold = DispatchSemaphore(value: 0)
        let held = DispatchSemaphore(value: 0)
        let holdAt: UInt64?
        init(holdAt: UInt64? = nil) { self.holdAt = holdAt }
    }

    func stage(_ q: BoundedQueue<ShardItem>, _ marks: Marks) -> DecodeStage {
        DecodeStage(shards: [q], decoder: WireDecoder(), capacity: 64, threshold: 1024) { seq in
            marks.calls.withLock { $0.append((seq, q.count)) }
            if seq == marks.holdAt {
                marks.held.signal()
                marks.hold.wait()
            }
        }
    }

    func route(_ s: DecodeStage, _ seq: UInt64, _ kind: String, _ payload: [UInt8]) {
        let topic = "mobility/v1/users/u1/\(kind)"
        s.route(seq: seq, topic: topic, parsed: layout.parse(topic), payload: payload, to: 0)
    }

    @Test func nothingOvertakesAMessageInTheStageAndTheQueuedMarkFollowsThePushes() throws {
        let q = BoundedQueue<ShardItem>(capacity: 100)
        let marks = Marks(holdAt: 1)
        let s = stage(q, marks)
        s.start()
        // The stage holds message 1 between its push and its mark: it is still in flight.
        route(s, 1, "samples", big("a"))
        #expect(marks.held.wait(timeout: .now() + 10) == .success)
        #expect(s.depth == 1)
        // Small messages and a tick while the stage is busy: through the stage, after message 1.
        route(s, 2, "deletions", Array("{\"ids\":[\"a-3\"]}".utf8))
        route(s, 3, "samples", Array(sampleJSON(id: "b", value: 1, end: "2026-03-01T11:00:00Z").utf8))
        s.deliver(.tick(Timestamp(milliseconds: 0)), to: 0)
        route(s, 4, "samples", big("c"))
        #expect(q.count == 1, "only message 1 is in the shard's queue")
        #expect(marks.calls.withLock { $0.map(\.seq) } == [1])
        marks.hold.signal()
        #expect(eventually { s.depth == 0 })
        // The stage is empty: a small message goes straight to the shard, a large one is decoded.
        route(s, 5, "samples", Array(sampleJSON(id: "e", value: 1, end: "2026-03-01T12:00:00Z").utf8))
        #expect(marks.calls.withLock { $0.last?.seq } == 5, "a direct push is marked by the router, at once")
        route(s, 6, "samples", big("f"))
        s.stop()  // drains into the shard
        #expect(s.depth == 0)
        var items: [ShardItem] = []
        q.takeAll(into: &items)
        #expect(names(items) == ["d1", "m2", "d3", "tick", "d4", "m5", "d6"])
        // Each mark came after its message's push: the queue held it and everything before it.
        let calls = marks.calls.withLock { $0 }
        #expect(calls.map(\.seq) == [1, 2, 3, 4, 5, 6])
        #expect(calls.map(\.queued) == [1, 2, 3, 5, 6, 7])
    }

    @Test func theStageDecodesAsTheIngestorsDecoderDoes() throws {
        let q = BoundedQueue<ShardItem>(capacity: 100)
        var decoder = WireDecoder()
        decoder.maxPayloadBytes = 3000  // the daemon's --max-payload-bytes, as the shards' ingestors have it
        let s = DecodeStage(shards: [q], decoder: decoder, capacity: 8, threshold: 1024) { _ in }
        s.start()
        var bad = big("x", 8)
        bad.removeLast()  // not JSON
        let payloads = [big("ok", 8), bad, big("large", 20)]
        for (k, p) in payloads.enumerated() { route(s, UInt64(k + 1), "samples", p) }
        s.stop()
        var items: [ShardItem] = []
        q.takeAll(into: &items)
        #expect(items.count == 3)
        for (item, p) in zip(items, payloads) {
            guard case .decodedSamples(_, let topic, let user, let got) = item else {
                Issue.record("not decoded: \(item)")
                continue
            }
            #expect(topic == "mobility/v1/users/u1/samples" && user == "u1")
            #expect(got == decoder.samples(p, user: "u1"))
        }
        if case .decodedSamples(_, _, _, .failure(let r)) = items[2] { #expect(r.reason == .payloadTooLarge) } else { Issue.record("the limit") }
    }

    @Test func afterStopItemsGoStraightToTheShard() throws {
        let q = BoundedQueue<ShardItem>(capacity: 100)
        let marks = Marks()
        let s = stage(q, marks)
        s.start()
        s.stop()
        route(s, 7, "samples", big("late"))
        var items: [ShardItem] = []
        q.takeAll(into: &items)
        #expect(names(items) == ["m7"])
        #expect(marks.calls.withLock { $0.map(\.seq) } == [7])
        #expect(s.depth == 0)
    }

    /// With more shards than one stage keeps up with, nothing goes through it: a large samples
    /// message reaches its shard undecoded, as without the stage.
    @Test func withMoreShardsThanItServesTheStageTakesNothing() throws {
        #expect(DecodeStage.threshold(shards: 1) == DecodeStage.defaultThreshold)
        #expect(DecodeStage.threshold(shards: DecodeStage.maxShards) == DecodeStage.defaultThreshold)
        let q = BoundedQueue<ShardItem>(capacity: 100)
        let s = DecodeStage(shards: [q], decoder: WireDecoder(), capacity: 64, threshold: DecodeStage.threshold(shards: DecodeStage.maxShards + 1)) { _ in }
        s.start()
        route(s, 3, "samples", big("many"))
        var items: [ShardItem] = []
        q.takeAll(into: &items)
        #expect(names(items) == ["m3"])
        #expect(s.depth == 0)
        s.stop()
    }
}
