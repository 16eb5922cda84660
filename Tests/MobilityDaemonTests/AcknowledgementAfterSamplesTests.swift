import Foundation
import MQTTTransport
import TestSupport
import Testing

/// Commit acknowledgements follow the commits that applied new samples of the user (docs/mqtt-api.md).
@Suite(.serialized) struct AcknowledgementAfterSamplesTests {
    /// A message of the user that is not samples (an event) applies no sample: its commit
    /// publishes no acknowledgement again. Before, every message of a user re-armed the user's
    /// last acknowledgement (an extra retained publish naming the same sample).
    @Test func anEventAfterSamplesPublishesNoSecondAcknowledgement() throws {
        let broker = try MosquittoBroker()
        // A commit per batch and acknowledgements after each commit: nothing coalesces them away.
        let daemon = try DaemonUnderTest(broker: broker, extra: ["--commit-interval", "0", "--ack-interval", "0"])
        let acks = "mobility/v1/users/ana/acks"
        let rec = try MQTTRecorder(url: broker.url, filters: [acks])
        try rec.publish(samplesTopic("ana"), sampleJSON(id: "ana-1", value: 1.2, end: "2026-02-01T08:00:00Z"))
        #expect(eventually { rec.messages(prefix: acks).count == 1 }, "\(daemon.process.log)")
        try rec.publish("mobility/v1/users/ana/events", "{\"id\":\"ana-e1\",\"kind\":\"injury\",\"date\":\"2026-01-30\"}")
        #expect(daemon.waitProcessed(2))
        #expect(daemon.waitIdle())
        #expect(daemon.metric("mobilityd_timeline_events_total") == 1)
        // The same user's next samples: their acknowledgement follows any the event's commit published.
        try rec.publish(samplesTopic("ana"), sampleJSON(id: "ana-2", value: 1.3, end: "2026-02-01T09:00:00Z"))
        #expect(eventually { rec.messages(prefix: acks).contains { $0.text.contains("ana-2") } }, "\(daemon.process.log)")
        #expect(rec.messages(prefix: acks).map(\.text) == [#"{"user":"ana","lastId":"ana-1"}"#, #"{"user":"ana","lastId":"ana-2"}"#])
        #expect(daemon.process.stop() == 0)
    }

    /// An acknowledgement that comes due while the publisher connection is down (the broker closed
    /// it: another client logged in with its client id) is published once the publisher is back.
    @Test func anAcknowledgementDueWhileThePublisherIsDisconnectedIsPublishedAfterTheReconnect() throws {
        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker, extra: ["--commit-interval", "0", "--ack-interval", "0"])
        let acks = "mobility/v1/users/ana/acks"
        let rec = try MQTTRecorder(url: broker.url, filters: [acks])
        // The broker closes the daemon's publisher for this client; the publisher reconnects after
        // its first backoff (1 s); this client leaves once the sample is processed.
        var c = MQTTClientConfiguration(broker: try BrokerURL(parsing: broker.url), clientID: "mobilityd-test-pub")
        c.cleanSession = true
        c.reconnectMinSeconds = 5
        c.reconnectMaxSeconds = 5
        let impostor = try MQTTClient(c, onMessage: { _, _, _ in })
        try impostor.start()
        #expect(eventually(timeout: 5) { impostor.isConnected })
        try rec.publish(samplesTopic("ana"), sampleJSON(id: "ana-1", value: 1.2, end: "2026-02-01T08:00:00Z"))
        #expect(daemon.waitProcessed(1))
        impostor.stop()
        #expect(
            eventually(timeout: 15) { rec.messages(prefix: acks).map(\.text) == [#"{"user":"ana","lastId":"ana-1"}"#] }, "\(daemon.process.log)")
        #expect((daemon.metric("mobilityd_broker_reconnects_total{role=\"publisher\"}") ?? 0) >= 1)
        #expect(daemon.process.stop() == 0)
    }
}
