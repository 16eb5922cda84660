import MQTTTransport
import TestSupport
import Testing

@testable import MobilityDaemon

/// The publisher's sink against a real broker that goes away and comes back.
@Suite(.serialized) struct MQTTOutputSinkTests {
    /// A publisher connection to `broker` whose answers go to `acks`, connected.
    private func publisher(_ broker: MosquittoBroker, acks: PublishTracker) throws -> MQTTClient {
        var c = MQTTClientConfiguration(broker: try BrokerURL(parsing: broker.url), clientID: "sink-test-pub")
        c.cleanSession = true
        c.reconnectMaxSeconds = 1
        let client = try MQTTClient(c, onMessage: { _, _, _ in }, onPublished: { _, mid, reason in acks.answered(mid: mid, reasonCode: reason) })
        try client.start()
        #expect(eventually(timeout: 5) { client.isConnected })
        return client
    }

    /// Commit acknowledgements made while the publisher is disconnected are published once it is
    /// connected again, the latest of each user only; then none is left unanswered.
    @Test func acknowledgementsMadeWhileDisconnectedArePublishedAfterTheReconnect() throws {
        let broker = try MosquittoBroker()
        let acks = PublishTracker()
        let client = try publisher(broker, acks: acks)
        defer { client.stop() }
        let sink = MQTTOutputSink(client: client, acks: acks)
        broker.stop()
        #expect(eventually(timeout: 10) { !client.isConnected })
        sink.publishAcknowledgement(topic: "mobility/v1/users/jamie/acks", payload: CommitAckPayload.bytes(user: "jamie", lastID: "s-1"))
        sink.publishAcknowledgement(topic: "mobility/v1/users/jamie/acks", payload: CommitAckPayload.bytes(user: "jamie", lastID: "s-2"))
        sink.publishAcknowledgement(topic: "mobility/v1/users/sam/acks", payload: CommitAckPayload.bytes(user: "sam", lastID: "t-9"))
        #expect(sink.acknowledgementsUnanswered == 2)
        try broker.start()
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/acks"])
        // The housekeeping timer's retries, until the broker has answered both.
        #expect(
            eventually(timeout: 15) {
                sink.retryAcknowledgements()
                return sink.acknowledgementsUnanswered == 0
            })
        #expect(try rec.barrier())
        let got = rec.messages().map { "\($0.topic) \($0.text)" }.sorted()
        #expect(
            got == [
                #"mobility/v1/users/jamie/acks {"user":"jamie","lastId":"s-2"}"#,
                #"mobility/v1/users/sam/acks {"user":"sam","lastId":"t-9"}"#
            ])
        // Answered ones are not published again on a later connection.
        broker.stop()
        #expect(eventually(timeout: 10) { !client.isConnected })
        try broker.start()
        #expect(eventually(timeout: 15) { client.isConnected })
        sink.retryAcknowledgements()
        let later = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/acks"])
        #expect(try later.barrier())
        #expect(later.messages().isEmpty)  // not retained by this broker (no persistence), and not re-published
    }
}
