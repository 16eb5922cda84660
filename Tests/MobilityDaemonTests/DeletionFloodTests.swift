import Foundation
import Glibc
import TestSupport
import Testing

/// One user's flood of deletions (1 000 ids each) against one shard: the shard works through it
/// in batches bounded by work, so `/healthz` stays 200, the systemd watchdog keeps being pinged,
/// and another user's sample queued in the middle of the flood is committed and acknowledged
/// before the flood is through. (Once, the shard took its whole queue as one batch: 400 such
/// messages ran for 62 s, `/healthz` 503 and no watchdog pings.)
@Suite(.serialized) struct DeletionFloodTests {
    static func deletion(_ m: Int) -> String {
        "{\"ids\":[" + (0..<1000).map { "\"flood-\(m)-\($0)-0123456789abcdef0123456789\"" }.joined(separator: ",") + "]}"
    }

    @Test func aFloodOfDeletionsNeitherStallsTheShardNorStarvesOtherUsers() throws {
        let notify = try NotifySocket()
        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(
            // A stall timeout of 3 s: a loaded CI runner's debug build must not make a bounded batch
            // look stalled (before the bound, one batch of this flood took up to 19 s).
            broker: broker, extra: ["--stall-timeout", "3", "--shards", "1", "--ack-interval", "0"],
            environment: ServiceNotifierTests.environment(notify, watchdogUsec: 400_000), watchdogPID: true)
        #expect(eventually { notify.messages(with: "READY=1").count == 1 })
        // Commit acknowledgements leave after each commit (--ack-interval 0), in commit order.
        let acks = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/calm/acks", "mobility/v1/users/flood/acks"])
        let calm = try MQTTRecorder(url: broker.url, filters: [])
        let flood = try MQTTRecorder(url: broker.url, filters: [])
        // The flooding user holds samples, so the deletions also remove held values.
        var held: [String] = []
        for k in 0..<200 { held.append(sampleJSON(id: "flood-0-\(k)-0123456789abcdef0123456789", value: 1.1, end: isoNow(days: -Double(k % 5) - 0.1))) }
        try flood.publish(samplesTopic("flood"), "[" + held.joined(separator: ",") + "]")
        #expect(daemon.waitProcessed(1), "\(daemon.process.log)")

        let n = 200
        let pingsBefore = notify.messages(with: "WATCHDOG=1").count
        let start = Date()
        for m in 0..<n {
            if m == n / 2 { try calm.publish(samplesTopic("calm"), sampleJSON(id: "c1", value: 1.2, end: isoNow())) }
            try flood.publish("mobility/v1/users/flood/deletions", Self.deletion(m))
        }
        // The flood's end: a sample of the flooding user, acknowledged once everything before it is handled.
        try flood.publish(samplesTopic("flood"), sampleJSON(id: "flood-end", value: 1.2, end: isoNow()))
        // Observe /healthz every 50 ms until the flood is through.
        var unhealthy: [String] = []
        let total = Double(1 + n + 2)
        let done = eventually(timeout: 120) {
            if let h = httpGet(port: daemon.metricsPort, path: "/healthz"), h.status != 200 { unhealthy.append(h.body) }
            usleep(50_000)  // the sampling period of this observation, not a synchronisation
            return daemon.metric("mobilityd_messages_received_total") == total && daemon.waitIdle(timeout: 0.01)
        }
        let seconds = Date().timeIntervalSince(start)
        #expect(done, "\(daemon.process.log.suffix(2000))")
        #expect(unhealthy.count == 0, "\(unhealthy.count) answers not 200, first: \(unhealthy.prefix(3))")
        // The other user's sample was committed and acknowledged by a batch before the flood's last.
        #expect(eventually { acks.messages().contains { $0.text.contains("\"flood-end\"") } })
        let order = acks.messages().map(\.text)
        let calmAcked = order.firstIndex { $0.contains("\"c1\"") }, floodDone = order.firstIndex { $0.contains("\"flood-end\"") }
        #expect(calmAcked != nil && floodDone != nil && calmAcked! < floodDone!, "\(order)")
        // Pinged at half the interval (200 ms) throughout.
        let pings = notify.messages(with: "WATCHDOG=1").count - pingsBefore
        #expect(Double(pings) >= seconds / 0.2 * 0.5, "\(pings) pings in \(seconds) s")
        let m = daemon.metrics()
        #expect((m["mobilityd_shard_batch_seconds_max{shard=\"0\"}"] ?? 99) < 2, "\(m["mobilityd_shard_batch_seconds_max{shard=\"0\"}"] ?? -1)")
        #expect(m["mobilityd_deletions_total"] == 200, "every held sample was deleted")
        #expect(daemon.process.stop() == 0)
    }
}
