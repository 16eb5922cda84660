import Ingest
import MobilityModel
import MobilityWire
import RuleEngine

/// The same traffic as different gateways and care teams would send it: the samples packed into
/// other messages, messages re-sent, clinical events entered late. A rule's alerts must not depend
/// on the first two, and only within the revision window on the third (docs/mqtt-api.md); the
/// tests feed these variations to the engine and to a live daemon.
package enum TrafficVariations {
    /// Each user's samples, in order, in messages of sizes drawn from `sizes` (default: one to 300,
    /// a sync of several days at the top); every other record stays where it was, after the
    /// samples that preceded it.
    package static func repack(_ records: [TrafficRecord], seed: UInt64, sizes: [Int] = [1, 1, 2, 5, 10, 25, 50, 100, 300]) -> [TrafficRecord] {
        var rng = SplitMix64(seed: seed)
        var out: [TrafficRecord] = [], pending: [String: (items: [ArraySlice<UInt8>], size: Int)] = [:]
        func flush(_ topic: String) {
            guard let p = pending[topic], !p.items.isEmpty else { return }
            out.append(TrafficRecord(topic: topic, payload: [0x5B] + Array(p.items.joined(separator: [0x2C])) + [0x5D]))
            pending[topic] = nil
        }
        for r in records {
            guard r.topic.hasSuffix("/samples") else {
                if let slash = r.topic.lastIndex(of: "/") { flush(r.topic[..<slash] + "/samples") }
                out.append(r)
                continue
            }
            for item in items(r.payload) {
                if pending[r.topic] == nil { pending[r.topic] = ([], sizes[Int(rng.next() % UInt64(sizes.count))]) }
                pending[r.topic]!.items.append(item)
                if pending[r.topic]!.items.count >= pending[r.topic]!.size { flush(r.topic) }
            }
        }
        for topic in pending.keys.sorted() { flush(topic) }
        return out
    }

    /// About one samples message in `every` re-sent (at once, or after a few later messages, as a
    /// gateway does after a lost connection), and every user's last samples message re-sent at
    /// the end.
    package static func resend(_ records: [TrafficRecord], seed: UInt64, every: UInt64 = 12) -> [TrafficRecord] {
        var rng = SplitMix64(seed: seed)
        var out: [TrafficRecord] = [], later: [(due: Int, record: TrafficRecord)] = [], last: [String: TrafficRecord] = [:]
        for (k, r) in records.enumerated() {
            out.append(r)
            for l in later where l.due == k { out.append(l.record) }
            later.removeAll { $0.due == k }
            guard r.topic.hasSuffix("/samples") else { continue }
            last[r.topic] = r
            if rng.next() % every == 0 {
                let delay = Int(rng.next() % 4)
                if delay == 0 { out.append(r) } else { later.append((k + delay * 7, r)) }
            }
        }
        out += later.map(\.record)
        out += last.keys.sorted().map { last[$0]! }
        return out
    }

    /// Each user's injuries moved after the first samples message of that user reaching `delay`
    /// days past their date (a clinician entering them late); entries never reached go last.
    package static func delayInjuries(_ records: [TrafficRecord], days delay: (String) -> Int) -> [TrafficRecord] {
        let layout = TopicLayout()
        var out: [TrafficRecord] = [], held: [String: [(due: String, record: TrafficRecord)]] = [:]
        for r in records {
            guard case .inbound(let user, let kind) = layout.parse(r.topic) else {
                out.append(r)
                continue
            }
            if kind == .events, case .success(let v) = JSONValue.parse(r.payload), case .string(let date)? = v["date"],
                case .string("injury")? = v["kind"], let d = CivilDate(parsing: Substring(date))
            {
                held[user, default: []].append((CivilDate(dayNumber: d.dayNumber + DayNumber(delay(user))).description, r))
                continue
            }
            out.append(r)
            guard kind == .samples, let due = held[user], !due.isEmpty else { continue }
            let reached =
                items(r.payload).compactMap { item -> String? in
                    guard case .success(let v) = JSONValue.parse(Array(item)), case .string(let end)? = v["end"] else { return nil }
                    return String(end.prefix(10))
                }.max() ?? ""
            out += due.filter { $0.due <= reached }.map(\.record)
            held[user] = due.filter { $0.due > reached }
        }
        for user in held.keys.sorted() { out += held[user]!.map(\.record) }
        return out
    }

    /// The items of a samples payload (a JSON array or one object), as raw bytes.
    package static func items(_ payload: [UInt8]) -> [ArraySlice<UInt8>] {
        let array = payload.first == 0x5B
        var bounds: [(Int, Int)] = []
        payload.withUnsafeBufferPointer { p in
            var depth = 0, start = -1, inString = false, escaped = false
            for i in 0..<p.count {
                let b = p[i]
                if inString {
                    if escaped { escaped = false } else if b == 0x5C { escaped = true } else if b == 0x22 { inString = false }
                    continue
                }
                switch b {
                case 0x22: inString = true
                case 0x7B, 0x5B:
                    if b == 0x7B && depth == (array ? 1 : 0) { start = i }
                    depth += 1
                case 0x7D, 0x5D:
                    depth -= 1
                    if b == 0x7D && depth == (array ? 1 : 0) { bounds.append((start, i)) }
                default: break
                }
            }
        }
        return bounds.map { payload[$0.0...$0.1] }
    }
}
