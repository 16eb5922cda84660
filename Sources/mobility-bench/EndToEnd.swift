import Foundation
import HTTPEndpoint
import Ingest
import MQTTTransport
import MobilityModel
import MobilityWire
import RuleEngine
import StateStore
import Synchronization

/// End-to-end measurements against a live broker and mobilityd (see scripts/bench-e2e.sh).
enum EndToEnd {
    final class Counter: Sendable {
        let n = Atomic<Int>(0)
        let stamps = Mutex<[UInt64]>([])
    }

    static func client(
        _ url: String, _ id: String, subscriptions: [String] = [], onMessage: @escaping @Sendable (String, [UInt8]) -> Void = { _, _ in }
    ) throws -> MQTTClient {
        var c = MQTTClientConfiguration(broker: try BrokerURL(parsing: url), clientID: id)
        c.cleanSession = true
        c.subscriptions = subscriptions
        c.maxInflight = 1000
        let cl = try MQTTClient(c, onMessage: onMessage)
        try cl.start()
        let deadline = Date().addingTimeInterval(10)
        while !cl.isConnected && Date() < deadline { usleep(5000) }
        usleep(200_000)
        return cl
    }

    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// The broker answered none of the publisher's messages in flight for a minute.
    struct Stalled: Error, CustomStringConvertible {
        /// Messages published and not answered.
        var inFlight: Int
        /// The error's text.
        var description: String { "the broker answered none of \(inFlight) messages in flight for 60 s" }
    }

    /// Publishes `payloads` as fast as acknowledgements allow: at most 1000 in flight; once full,
    /// it waits until half have been answered, looking every millisecond (a few wake-ups, not CPU
    /// taken from the broker and daemon it measures on the same cores), and throws ``Stalled``
    /// when none is answered for 60 s.
    static func flood(_ pub: MQTTClient, _ payloads: [(String, [UInt8])]) throws {
        func answered() -> Int { pub.acknowledgedCount + pub.refusedCount }
        for (t, p) in payloads {
            if pub.publishedCount - answered() >= 1000 {
                var last = answered(), since = now()
                while pub.publishedCount - answered() > 500 {
                    usleep(1000)
                    if answered() != last {
                        last = answered()
                        since = now()
                    } else if now() - since > 60_000_000_000 {
                        throw Stalled(inFlight: pub.publishedCount - last)
                    }
                }
            }
            try pub.publish(topic: t, payload: p, qos: 1)
        }
    }

    static func sample(_ id: String, ms: Int64, metric: String = "walkingSpeed", value: Double = 1.2, unit: String = "m/s", extra: String = "") -> String {
        let t = Timestamp(milliseconds: ms).description
        return
            "{\"id\":\"\(id)\",\"type\":\"\(metric)\",\"value\":\(value),\"unit\":\"\(unit)\",\"start\":\"\(t)\",\"end\":\"\(t)\",\"source\":{\"bundleId\":\"com.apple.health.b\"}\(extra)}"
    }

    /// Reads one metric from mobilityd's `/metrics` through `session`: one kept-alive connection,
    /// since the rounds read a counter every 10 ms, and a new connection a read cost the measured
    /// daemon more CPU than rendering the page.
    static func metric(_ session: LoopbackHTTP.Session, _ name: String) -> Double? {
        guard let r = session.get("/metrics"), r.status == 200 else { return nil }
        for line in r.body.split(separator: "\n") where line.hasPrefix(name + " ") { return Double(line.split(separator: " ").last!) }
        return nil
    }

    /// Waits for a condition for at most `seconds`, checking every `every` microseconds; false on time-out.
    static func wait(_ seconds: Double, every: UInt32 = 500, _ cond: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline { if cond() { return true }; usleep(every) }
        return cond()
    }

    /// The journal-only bound, in messages/s: `payloads` flooded into one QoS 1 subscriber (one
    /// libmosquitto network thread, as mobilityd's) that appends each message to an
    /// `IngestJournal` under `scratch` in its callback and does nothing else. It bounds a daemon
    /// built that way, on the same VM minutes. Nil (and a line printed) when an append fails or
    /// not all arrive.
    static func journalOnly(
        _ broker: String, _ pub: MQTTClient, _ payloads: [[UInt8]], round: Int, scratch: String, watched: [(name: String, pid: Int32)]
    ) throws -> (rate: Double, cost: String)? {
        let dir = scratch + "/journal-only-\(getpid())-\(round)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let journal = try IngestJournal(directory: dir)
        let journalled = Counter(), failed = Counter()
        let sub = try client(broker, "bench-journal-only-sub", subscriptions: ["bench/journal-only"]) { t, p in
            if (try? journal.append(topic: t, payload: p)) != nil { journalled.n.add(1, ordering: .relaxed) } else { failed.n.add(1, ordering: .relaxed) }
        }
        defer { sub.stop() }
        let cpu = CPUSnapshot.take(watched)
        let t0 = now()
        try flood(pub, payloads.map { ("bench/journal-only", $0) })
        guard wait(300, { journalled.n.load(ordering: .relaxed) >= payloads.count || failed.n.load(ordering: .relaxed) > 0 }),
            failed.n.load(ordering: .relaxed) == 0
        else {
            print(
                "journal-only: \(journalled.n.load(ordering: .relaxed)) of \(payloads.count) journalled, \(failed.n.load(ordering: .relaxed)) appends failed in \(dir)"
            )
            return nil
        }
        let rate = Double(payloads.count) / (Double(now() - t0) / 1e9)
        return (rate, CPUSnapshot.take(watched).costLine(since: cpu, messages: payloads.count))
    }

    /// `runs` rounds of: the broker's ceiling, mobilityd's throughput in the same round, and (with
    /// `latency`) alert latency; each round printed, then the medians.
    static func run(
        broker: String, metricsPort: Int, messages: Int, batch: Int, runs: Int, latency: Bool, scratch: String, watched: [(name: String, pid: Int32)]
    ) throws {
        let pub = try client(broker, "bench-pub")
        let metrics = LoopbackHTTP.Session(port: metricsPort)
        var ratios: [Double] = [], bounds: [Double] = [], rates: [Double] = [], p50s: [Double] = [], p99s: [Double] = [], echoP99s: [Double] = []
        for round in 0..<runs {
            let wallMs = Int64(Date().timeIntervalSince1970 * 1000)
            // 1. The broker's own ceiling: one publisher, one subscriber that only counts (QoS 1).
            let counter = Counter()
            let sub = try client(broker, "bench-ceiling-sub", subscriptions: ["bench/ceiling"]) { _, _ in counter.n.add(1, ordering: .relaxed) }
            // The messages mobilityd gets in step 2; the ceiling and the bound carry the same bodies.
            var payloads: [(String, [UInt8])] = []
            payloads.reserveCapacity(messages)
            for i in 0..<messages {
                let user = "b\(i % 1000)"
                let items = (0..<batch).map { k in sample("e\(wallMs)-\(batch)-\(i)-\(k)", ms: wallMs - Int64(i % 3600) * 1000) }
                payloads.append((TopicLayout().samples(user), Array((batch == 1 ? items[0] : "[" + items.joined(separator: ",") + "]").utf8)))
            }
            var cpu = CPUSnapshot.take(watched)
            var t0 = now()
            try flood(pub, payloads.map { ("bench/ceiling", $0.1) })
            guard wait(120, { counter.n.load(ordering: .relaxed) >= messages }) else {
                print("ceiling: only \(counter.n.load(ordering: .relaxed)) of \(messages) arrived"); return
            }
            let ceiling = Double(messages) / (Double(now() - t0) / 1e9)
            let ceilingCost = CPUSnapshot.take(watched).costLine(since: cpu, messages: messages)
            sub.stop()
            print("round \(round + 1): broker ceiling on the same payloads, 1 publisher → 1 counting subscriber, QoS 1    \(Int(ceiling)) messages/s")
            print("round \(round + 1):   \(ceilingCost)")
            guard
                let (bound, boundCost) = try journalOnly(broker, pub, payloads.map { $0.1 }, round: round, scratch: scratch, watched: watched)
            else { return }
            bounds.append(bound / ceiling)
            print(
                "round \(round + 1): broker + a subscriber that only journals   \(Int(bound)) messages/s; ratio to ceiling \(String(format: "%.2f", bound / ceiling))"
            )
            print("round \(round + 1):   \(boundCost)")

            // 2. Through mobilityd: the same rate of sample messages, batch samples per message.
            guard let before = metric(metrics, "mobilityd_samples_accepted_total") else {
                print("cannot read mobilityd metrics on port \(metricsPort)"); return
            }
            cpu = CPUSnapshot.take(watched)
            t0 = now()
            try flood(pub, payloads)
            let target = before + Double(messages * batch)
            // Polled every 10 ms: each poll renders mobilityd's /metrics, which at 0.5 ms intervals
            // (2 000 requests/s) took CPU from the daemon being measured. Resolution: 10 ms of a ~1 s run.
            guard wait(300, every: 10_000, { (metric(metrics, "mobilityd_samples_accepted_total") ?? 0) >= target }) else {
                print(
                    "mobilityd: only \(Int((metric(metrics, "mobilityd_samples_accepted_total") ?? 0) - before)) of \(messages * batch) samples accepted");
                return
            }
            let secs = Double(now() - t0) / 1e9
            let daemonCost = CPUSnapshot.take(watched).costLine(since: cpu, messages: messages)
            let rate = Double(messages) / secs
            ratios.append(rate / ceiling)
            rates.append(rate * Double(batch))
            print(
                "round \(round + 1): mobilityd, \(batch) sample\(batch == 1 ? "" : "s") per message, durability on   \(Int(rate)) messages/s = \(Int(rate * Double(batch))) samples/s; ratio to ceiling \(String(format: "%.2f", rate / ceiling))"
            )
            print("round \(round + 1):   \(daemonCost)")

            // 3. Alert latency at ~1000 samples/s: per-sample rule, fire/resolve alternating.
            guard latency else { continue }
            // Steady state, not the tail of the burst: the burst's last group commit (up to
            // --commit-interval behind, default 100 ms) and the WAL checkpoints that copy the
            // burst's commits finish first; otherwise they hold the store for the first alerts.
            usleep(600_000)
            // The control: the same publisher, rate and subscriber through the broker alone (the
            // sample is its own echo), so the daemon's share of the tail can be told from the VM's.
            let n = 3000
            let latUser = "lat\(wallMs)"  // a fresh user each round: its alert alternates from inactive
            func latencyPayload(_ i: Int) -> [UInt8] {
                Array(
                    sample(
                        "lat-\(i)-\(wallMs)", ms: wallMs - Int64(n - i) * 1000, metric: "sixMinuteWalkTestDistance", value: i % 2 == 0 ? 500 : 420,
                        unit: "m", extra: ",\"metadata\":{\"HKMetadataKeyAppleDeviceCalibrated\":\"1\"}"
                    ).utf8)
            }
            guard
                let echo = try roundTrips(broker, pub, n: n, publishTo: "bench/echo/\(latUser)", receiveFrom: "bench/echo/\(latUser)", payload: latencyPayload),
                let lat = try roundTrips(
                    broker, pub, n: n, publishTo: TopicLayout().samples(latUser),
                    receiveFrom: TopicLayout().alert(latUser, rule: "uncalibrated_6mwd"), payload: latencyPayload)
            else { continue }
            p50s.append(lat[n / 2])
            p99s.append(lat[n * 99 / 100])
            echoP99s.append(echo[n * 99 / 100])
            print(
                "round \(round + 1): alert latency, sample published → alert received, ~1k/s   p50 \(String(format: "%.3f", lat[n / 2])) ms, p99 \(String(format: "%.3f", lat[n * 99 / 100])) ms (\(n) alerts); the broker alone (published → echo received): p50 \(String(format: "%.3f", echo[n / 2])) ms, p99 \(String(format: "%.3f", echo[n * 99 / 100])) ms"
            )
        }
        print(
            "median of \(runs): \(batch) sample\(batch == 1 ? "" : "s") per message: \(Int(median(rates))) samples/s, ratio to ceiling \(String(format: "%.2f", median(ratios))) (a subscriber that only journals: \(String(format: "%.2f", median(bounds))))"
                + (p99s.isEmpty
                    ? ""
                    : "; alert latency p50 \(String(format: "%.3f", median(p50s))) ms, p99 \(String(format: "%.3f", median(p99s))) ms; the broker alone p99 \(String(format: "%.3f", median(echoP99s))) ms")
        )
        pub.stop()
    }

    /// Publishes `n` payloads at ~1 kHz (QoS 1) and returns each one's time until the message it
    /// causes on `receiveFrom` arrives (non-empty payloads, in order), in ms, sorted; nil (and a
    /// line printed) when some did not arrive within 10 s.
    static func roundTrips(
        _ broker: String, _ pub: MQTTClient, n: Int, publishTo: String, receiveFrom: String, payload: (Int) -> [UInt8]
    ) throws -> [Double]? {
        let received = Counter()
        let sub = try client(broker, "bench-latency-sub", subscriptions: [receiveFrom]) { _, p in
            guard !p.isEmpty else { return }
            received.stamps.withLock { $0.append(now()) }
        }
        defer { sub.stop() }
        var sent: [UInt64] = []
        sent.reserveCapacity(n)
        for i in 0..<n {
            let p = payload(i)
            sent.append(now())
            try pub.publish(topic: publishTo, payload: p, qos: 1)
            usleep(1000)
        }
        let deadline = Date().addingTimeInterval(10)
        while received.stamps.withLock({ $0.count }) < n && Date() < deadline { usleep(1000) }
        let got = received.stamps.withLock { $0 }
        guard got.count == n else {
            print("\(receiveFrom): only \(got.count) of \(n) arrived")
            return nil
        }
        return zip(sent, got).map { Double($1 - $0) / 1e6 }.sorted()
    }

    /// Recorded traffic (`{"topic","payload"}` lines, e.g. `mobility-sim population --sync-days 3
    /// --samples-per-message 50`) through mobilityd (`--clock event`), `runs` rounds: the broker's
    /// ceiling on the same payloads, then mobilityd until every sample is accepted. Each round
    /// renames the users (`r<round>-<user>`), so its samples are new to the daemon.
    static func runTraffic(broker: String, metricsPort: Int, path: String, runs: Int, scratch: String, watched: [(name: String, pid: Int32)]) throws {
        guard let data = FileManager.default.contents(atPath: path) else { print("cannot read \(path)"); return }
        var records: [TrafficRecord] = []
        for line in data.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
            let bytes = Array(line)
            // The envelope scan (no JSON tree: a sync file is hundreds of MB); the full parse otherwise.
            if let l = bytes.withUnsafeBufferPointer({ TrafficLine.scan($0) }) {
                records.append(TrafficRecord(topic: String(decoding: bytes[l.topic], as: UTF8.self), payload: Array(bytes[l.payload])))
            } else if case .success(let r) = TrafficRecord.parse(bytes) {
                records.append(r)
            } else {
                print("not a traffic line in \(path)"); return
            }
        }
        let marker = Array("\"type\":".utf8)
        var samples = 0
        for r in records where r.topic.hasSuffix("/samples") {
            r.payload.withUnsafeBufferPointer { b in
                var k = 0
                while k + marker.count <= b.count {
                    if b[k] == marker[0] && memcmp(b.baseAddress! + k, marker, marker.count) == 0 { samples += 1; k += marker.count } else { k += 1 }
                }
            }
        }
        let prefix = TopicLayout.defaultRoot + "/users/"
        print("traffic \(path): \(records.count) messages, \(samples) samples")
        let pub = try client(broker, "bench-pub")
        let metrics = LoopbackHTTP.Session(port: metricsPort)
        var ratios: [Double] = [], rates: [Double] = [], boundRates: [Double] = []
        for round in 0..<runs {
            let counter = Counter()
            let sub = try client(broker, "bench-ceiling-sub", subscriptions: ["bench/ceiling"]) { _, _ in counter.n.add(1, ordering: .relaxed) }
            let ceilingPayloads = records.map { ("bench/ceiling", $0.payload) }
            var cpu = CPUSnapshot.take(watched)
            var t0 = now()
            try flood(pub, ceilingPayloads)
            guard wait(300, { counter.n.load(ordering: .relaxed) >= records.count }) else {
                print("ceiling: only \(counter.n.load(ordering: .relaxed)) of \(records.count) arrived"); return
            }
            let ceiling = Double(records.count) / (Double(now() - t0) / 1e9)
            let ceilingCost = CPUSnapshot.take(watched).costLine(since: cpu, messages: records.count)
            sub.stop()
            print(
                "round \(round + 1): broker ceiling on the same payloads    \(Int(ceiling)) messages/s = \(Int(ceiling * Double(samples) / Double(records.count))) samples/s"
            )
            print("round \(round + 1):   \(ceilingCost)")
            guard let (bound, boundCost) = try journalOnly(broker, pub, records.map { $0.payload }, round: round, scratch: scratch, watched: watched) else {
                return
            }
            boundRates.append(bound * Double(samples) / Double(records.count))
            print(
                "round \(round + 1): broker + a subscriber that only journals   \(Int(bound)) messages/s = \(Int(bound * Double(samples) / Double(records.count))) samples/s"
            )
            print("round \(round + 1):   \(boundCost)")
            guard let before = metric(metrics, "mobilityd_samples_accepted_total") else {
                print("cannot read mobilityd metrics on port \(metricsPort)"); return
            }
            let renamed = records.map { r in
                (r.topic.hasPrefix(prefix) ? prefix + "r\(round)-" + r.topic.dropFirst(prefix.count) : r.topic, r.payload)
            }
            cpu = CPUSnapshot.take(watched)
            t0 = now()
            try flood(pub, renamed)
            let target = before + Double(samples)
            guard wait(600, every: 10_000, { (metric(metrics, "mobilityd_samples_accepted_total") ?? 0) >= target }) else {
                print("mobilityd: only \(Int((metric(metrics, "mobilityd_samples_accepted_total") ?? 0) - before)) of \(samples) samples accepted")
                return
            }
            let secs = Double(now() - t0) / 1e9
            let daemonCost = CPUSnapshot.take(watched).costLine(since: cpu, messages: records.count)
            let rate = Double(records.count) / secs
            ratios.append(rate / ceiling)
            rates.append(Double(samples) / secs)
            print(
                "round \(round + 1): mobilityd, recorded traffic, durability on   \(Int(rate)) messages/s = \(Int(Double(samples) / secs)) samples/s; ratio to ceiling \(String(format: "%.2f", rate / ceiling))"
            )
            print("round \(round + 1):   \(daemonCost)")
        }
        print(
            "median of \(runs): recorded traffic: \(Int(median(rates))) samples/s, ratio to ceiling \(String(format: "%.2f", median(ratios))); a subscriber that only journals: \(Int(median(boundRates))) samples/s"
        )
        pub.stop()
    }
}
