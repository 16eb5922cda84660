import Foundation
import Glibc
import MobilityModel
import StateStore
import TestSupport
import Testing

/// Outputs the broker refuses (an ACL that misses a topic) are counted, logged once and parked as
/// dead letters; the other outputs keep flowing and the publisher does not reconnect in a loop.
@Suite(.serialized) struct DeliveryFailureTests {
    @Test func refusedOutputsAreParkedAndTheRestFlow() throws {
        // The operator's mistake of the issue: no write for acks (and, here, none for series either).
        let d = try ShippedDeployment(editACL: [("topic write mobility/v1/users/+/acks\n", ""), ("topic write mobility/v1/users/+/series/#\n", "")])
        try d.startDaemon(edit: [("clock = wall", "clock = event")])
        let dashboard = try d.client("care-dashboard", filters: ["mobility/v1/users/+/alerts/#"])
        let jamie = try d.client("jamie", filters: [])
        // Ten days of walking speed (each day close publishes series), then a capped 6MWD estimate.
        var batch: [String] = []
        for day in 1...10 {
            for k in 0..<3 { batch.append(sampleJSON(id: "ws-\(day)-\(k)", value: 1.2345, end: String(format: "2026-03-%02dT1%d:00:00Z", day, k))) }
        }
        #expect(try jamie.publishAwaitingAnswer(samplesTopic("jamie"), "[" + batch.joined(separator: ",") + "]") == 0)
        let estimate = sampleJSON(id: "w1", type: "sixMinuteWalkTestDistance", value: 500, unit: "m", end: "2026-03-11T10:00:00Z")
        #expect(eventually(timeout: 5) { jamie.isConnected })
        #expect(try jamie.publishAwaitingAnswer(samplesTopic("jamie"), estimate) == 0)
        // The alert arrives although series and acks are refused.
        let alert = alertTopic("jamie", "uncalibrated_6mwd")
        #expect(eventually(timeout: 15) { dashboard.messages(prefix: alert).count == 1 }, "\(d.daemon!.log)")
        // Every series output is refused and parked; so is the first ack (acks are not stored).
        var m: [String: Double] = [:]
        #expect(
            eventually(timeout: 10) {
                m = d.metrics()
                return m["mobilityd_series_published_total"].map { $0 > 0 && m["mobilityd_dead_letters"] == $0 } ?? false
            }, "\(m)")
        #expect(m["mobilityd_publish_refused_total{kind=\"series\",reason=\"not_authorized\"}"] == m["mobilityd_series_published_total"])
        #expect((m["mobilityd_publish_refused_total{kind=\"ack\",reason=\"not_authorized\"}"] ?? 0) >= 1)
        #expect(m["mobilityd_publish_refused_total{kind=\"alert\",reason=\"not_authorized\"}"] == nil)
        // No reconnection loop: the publisher stayed connected throughout.
        #expect(m["mobilityd_broker_reconnects_total{role=\"publisher\"}"] == 0, "\(m)")
        #expect(
            eventually(timeout: 10) { httpGet(port: d.metricsPort, path: "/healthz")?.status == 200 && d.metrics()["mobilityd_outputs_unacknowledged"] == 0 })
        let log = d.daemon!.log
        #expect(log.components(separatedBy: "parked as a dead letter").count - 1 == 1, "\(log)")  // once, however many series
        #expect(log.components(separatedBy: "broker refused an output\"").count - 1 == 1, "\(log)")  // the ack, once
        #expect(log.contains("\"kind\":\"series\"") && log.contains("\"reason\":\"not_authorized\""))
        #expect(!log.contains("1.2345"), "a health value reached the log")  // the refusal logs kinds and reasons only
        let parked = m["mobilityd_dead_letters"] ?? -1
        // While it runs: the answered outputs leave the outbox (the delivered alert deleted, the
        // refused series moved to the dead letters), not only at the stop's last flush.
        let reading = try StateStore(path: d.dir + "/state/state.sqlite", readOnly: true)
        #expect(eventually(timeout: 5) { (try? reading.outboxCount()) == 0 }, "\((try? reading.outboxCount()) ?? -1) outbox items left")
        #expect(d.daemon!.stop() == 0, "\(d.daemon!.log)")
        // The dead letters are in the store, with their topic and reason; the outbox is empty.
        let store = try StateStore(path: d.dir + "/state/state.sqlite")
        let letters = try store.deadLetters()
        #expect(Double(letters.count) == parked)
        #expect(letters.allSatisfy { $0.topic == "mobility/v1/users/jamie/series" })
        #expect(Set(letters.map(\.reason)) == ["not_authorized"])
        #expect(try store.outboxCount() == 0)
    }

    /// A payload over the daemon's limit is rejected without being copied into the journal (a
    /// broker without `message_size_limit` delivers it).
    @Test func oversizedPayloadIsRejectedWithoutJournaling() throws {
        let broker = try MosquittoBroker()
        let state = TemporaryPath.make("mw-state")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--max-payload", "4096"])
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/rejected"])
        try rec.publish(samplesTopic("u1"), String(repeating: " ", count: 8 << 20) + "[]")  // 8 MiB
        #expect(eventually { rec.messages().count == 1 })
        #expect(rec.messages().first?.text.contains("\"reason\":\"payload_too_large\"") == true)
        #expect(rec.messages().first?.text.contains("8388610 bytes") == true)
        #expect(daemon.metric("mobilityd_rejected_total{reason=\"payload_too_large\"}") == 1)
        let journal = try FileManager.default.contentsOfDirectory(atPath: state + "/journal").reduce(0) { total, f in
            total + ((try? FileManager.default.attributesOfItem(atPath: state + "/journal/" + f)[.size] as? Int) ?? 0)
        }
        #expect(journal < 4096, "the journal holds \(journal) bytes")
        #expect(daemon.process.stop() == 0, "\(daemon.process.log)")
    }
}
