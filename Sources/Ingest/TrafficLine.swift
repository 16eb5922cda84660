import MobilityModel

#if canImport(Glibc)
    import Glibc
#endif

/// Where the topic and payload are in a recorded traffic line, found without parsing it.
///
/// The replay's fast path: a line shaped `{"topic": "...", "payload": {...} | [...]}` (the order
/// `mobility-sim` writes, any JSON whitespace) with a topic free of escapes. The scan checks the
/// envelope only; the payload is validated by whoever decodes it (simdjson for samples), and a
/// line whose payload does not decode, or any other shape, goes through the full JSON parse of
/// ``TrafficRecord/parse(_:)`` so that what counts as malformed does not change.
package struct TrafficLine: Sendable, Equatable {
    /// The topic's bytes (between its quotes).
    package var topic: Range<Int>
    /// The payload value's bytes (an object or array, up to the envelope's closing brace).
    package var payload: Range<Int>

    /// Scans a line; nil when it is not of the fast path's shape.
    package static func scan(_ b: UnsafeBufferPointer<UInt8>) -> TrafficLine? {
        if let compact = scanCompact(b) { return compact }
        var i = 0
        let n = b.count
        @inline(__always) func skipSpace() { while i < n, b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x0D || b[i] == 0x0A { i += 1 } }
        @inline(__always) func expect(_ c: UInt8) -> Bool {
            skipSpace()
            guard i < n, b[i] == c else { return false }
            i += 1
            return true
        }
        @inline(__always) func expectKey(_ k: StaticString) -> Bool {
            guard expect(0x22), i + k.utf8CodeUnitCount < n else { return false }
            let p = k.utf8Start
            for j in 0..<k.utf8CodeUnitCount where b[i + j] != p[j] { return false }
            i += k.utf8CodeUnitCount
            guard b[i] == 0x22 else { return false }
            i += 1
            return expect(0x3A)
        }
        guard expect(0x7B), expectKey("topic"), expect(0x22) else { return nil }
        let topicStart = i
        while i < n, b[i] != 0x22 {
            guard b[i] != 0x5C, b[i] >= 0x20 else { return nil }  // an escape or a control character: the full parse
            i += 1
        }
        guard i < n else { return nil }
        let topic = topicStart..<i
        i += 1
        guard expect(0x2C), expectKey("payload") else { return nil }
        return tail(b, topic: topic, payloadStart: i)
    }

    /// ``scan(_:)`` of the compact envelope `mobility-sim` writes, `{"topic":"...","payload":`
    /// without whitespace, by `memcmp`; nil for any other line (``scan(_:)`` then tries every spelling).
    @inline(__always)
    private static func scanCompact(_ b: UnsafeBufferPointer<UInt8>) -> TrafficLine? {
        let head: StaticString = #"{"topic":""#, middle: StaticString = #"","payload":"#
        let n = b.count
        guard n > head.utf8CodeUnitCount + middle.utf8CodeUnitCount, let base = b.baseAddress,
            memcmp(base, head.utf8Start, head.utf8CodeUnitCount) == 0
        else { return nil }
        var i = head.utf8CodeUnitCount
        let topicStart = i
        while i < n, b[i] != 0x22 {
            guard b[i] != 0x5C, b[i] >= 0x20 else { return nil }
            i += 1
        }
        guard i + middle.utf8CodeUnitCount < n, memcmp(base + i, middle.utf8Start, middle.utf8CodeUnitCount) == 0 else { return nil }
        return tail(b, topic: topicStart..<i, payloadStart: i + middle.utf8CodeUnitCount)
    }

    /// The payload from `i` (after the `"payload":` key, whitespace not yet skipped) to the envelope's closing brace.
    @inline(__always)
    private static func tail(_ b: UnsafeBufferPointer<UInt8>, topic: Range<Int>, payloadStart: Int) -> TrafficLine? {
        var i = payloadStart
        let n = b.count
        while i < n, b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x0D || b[i] == 0x0A { i += 1 }
        guard i < n, b[i] == 0x7B || b[i] == 0x5B else { return nil }
        var end = n
        while end > i, b[end - 1] == 0x20 || b[end - 1] == 0x09 || b[end - 1] == 0x0D || b[end - 1] == 0x0A { end -= 1 }
        guard end > i + 1, b[end - 1] == 0x7D else { return nil }
        end -= 1
        while end > i, b[end - 1] == 0x20 || b[end - 1] == 0x09 || b[end - 1] == 0x0D || b[end - 1] == 0x0A { end -= 1 }
        return TrafficLine(topic: topic, payload: i..<end)
    }

    /// The shard a line's user belongs to: a hash of the topic up to its last `/` (the same for
    /// every topic of one user), so that each user's lines are replayed by one shard, in order.
    package static func shard(ofTopic t: UnsafeBufferPointer<UInt8>, shards: Int) -> Int {
        var last = t.count
        while last > 0, t[last - 1] != 0x2F { last -= 1 }
        var h = FNV1a64()
        h.combine(bytes: UnsafeBufferPointer(rebasing: t[0..<max(last, 0)]))
        return Int(h.value % UInt64(shards))
    }
}
