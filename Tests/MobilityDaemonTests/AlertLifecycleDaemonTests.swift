import Foundation
import Glibc
import MobilityModel
import TestSupport
import Testing

/// Alert instances across a restart of the real daemon. (A reload, in-process: ``ShardReloadTests``.)
@Suite(.serialized) struct AlertLifecycleDaemonTests {
    func copyOfShippedRules() throws -> String {
        let dir = TemporaryPath.make("mw-rules")
        try FileManager.default.copyItem(atPath: RepoPaths.rules, toPath: dir)
        return dir
    }

    /// After the firing transition: the removed rule's instance expires (it is not resolved:
    /// nothing showed its condition false), saying why, and its retained state is cleared
    /// (nothing retained for a later subscriber).
    func expectExpiredAsRemoved(_ rec: MQTTRecorder, firing: JSONValue, broker: MosquittoBroker, topic: String, log: String = "") throws {
        #expect(eventually { rec.messages().count == 3 }, "\(log)")
        let msgs = rec.messages()
        try #require(msgs.count == 3)
        let resolved = try JSONValue.parse(msgs[1].payload).get()
        #expect(resolved["status"] == .string("expired"))
        #expect(resolved["reason"] == .string("rule_removed"))
        #expect(resolved["id"] == firing["id"])
        #expect(msgs[2].payload.isEmpty)
        let later = try MQTTRecorder(url: broker.url, filters: [topic])
        #expect(!eventually(timeout: 0.5) { !later.messages().isEmpty })
    }

    /// A rule removed while the daemon was stopped: the restart is a reload from the rules the
    /// state was made with (kept in the store), so the instance expires and its retained topic
    /// clears. Before, the store dropped the rule's state on load and the alert stood for good.
    @Test func aRuleRemovedWhileStoppedExpiresAtTheRestart() throws {
        let dir = try copyOfShippedRules()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let broker = try MosquittoBroker()
        let state = TemporaryPath.make("mw-state")
        defer { try? FileManager.default.removeItem(atPath: state) }
        var daemon = try DaemonUnderTest(broker: broker, rules: dir, state: state)
        let topic = alertTopic("kim", "uncalibrated_6mwd")
        let rec = try MQTTRecorder(url: broker.url, filters: [topic])
        try rec.publish(samplesTopic("kim"), sampleJSON(id: "k1", type: "sixMinuteWalkTestDistance", value: 500, unit: "m", end: "2026-02-01T08:00:00Z"))
        #expect(eventually { rec.messages().count == 1 })
        let firing = try JSONValue.parse(rec.messages()[0].payload).get()
        #expect(daemon.process.stop() == 0)
        try FileManager.default.removeItem(atPath: dir + "/six_minute_walk.rules")
        // report.rules names the six-minute-walk series and rule: the set would not check without them
        try FileManager.default.removeItem(atPath: dir + "/report.rules")
        daemon = try DaemonUnderTest(broker: broker, rules: dir, state: state)
        try expectExpiredAsRemoved(rec, firing: firing, broker: broker, topic: topic, log: daemon.process.log)
        #expect(daemon.metric("mobilityd_alerts_firing{rule=\"uncalibrated_6mwd\"}") == nil)
        // A restart with the same rules again changes nothing.
        #expect(daemon.process.stop() == 0)
        daemon = try DaemonUnderTest(broker: broker, rules: dir, state: state)
        #expect(daemon.waitIdle())
        #expect(rec.messages().count == 3)
        #expect(daemon.process.stop() == 0)
    }

    @Test func firingGaugeCountsRestoredAlertsAndNeverGoesNegative() throws {
        let broker = try MosquittoBroker()
        let state = TemporaryPath.make("mw-state")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let gauge = "mobilityd_alerts_firing{rule=\"uncalibrated_6mwd\"}"
        let rec = try MQTTRecorder(url: broker.url, filters: [alertTopic("+", "uncalibrated_6mwd")])
        var daemon = try DaemonUnderTest(broker: broker, state: state)
        for u in ["ann", "bob"] {
            try rec.publish(samplesTopic(u), sampleJSON(id: "\(u)1", type: "sixMinuteWalkTestDistance", value: 500, unit: "m", end: "2026-03-01T10:00:00Z"))
        }
        #expect(eventually { daemon.metric(gauge) == 2 })
        #expect(daemon.process.stop() == 0)
        // Restarted on the same state: the two firing alerts are counted.
        daemon = try DaemonUnderTest(broker: broker, state: state)
        #expect(daemon.metric(gauge) == 2)
        try rec.publish(
            samplesTopic("ann"),
            sampleJSON(
                id: "ann2", type: "sixMinuteWalkTestDistance", value: 420, unit: "m",
                end: "2026-03-08T10:00:00Z", metadata: "{\"HKMetadataKeyAppleDeviceCalibrated\":\"1\"}"))
        #expect(eventually { rec.messages().contains { $0.text.contains("\"status\":\"resolved\"") } })
        #expect(eventually { daemon.metric(gauge) == 1 })
        #expect(daemon.process.stop() == 0)
    }
}
