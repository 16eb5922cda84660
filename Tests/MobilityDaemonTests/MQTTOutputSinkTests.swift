import Foundation
import MQTTTransport
import StateStore
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

    /// A backlog of outputs the broker has not answered takes at most ``MQTTOutputSink/outputWindow``
    /// of the publishes in flight: a commit acknowledgement is still handed over at once (it
    /// would otherwise reach its gateway only after the backlog, long enough for the gateway to
    /// re-send what it does not cover), and everything goes once the broker answers again.
    @Test func acknowledgementsAreNotHeldBehindABacklogOfOutputs() throws {
        let broker = try MosquittoBroker()
        let acks = PublishTracker()
        let client = try publisher(broker, acks: acks)
        defer { client.stop() }
        let sink = MQTTOutputSink(client: client, acks: acks)
        broker.signal(SIGSTOP)
        defer { broker.signal(SIGCONT) }
        let items = (0..<(MQTTOutputSink.outputWindow + 500)).map {
            StateStore.OutboxItem(id: Int64($0 + 1), topic: "mobility/v1/users/u\($0)/rejected", payload: [0x7b, 0x7d], retain: false)
        }
        #expect(sink.publish(items) == 0)
        #expect(acks.inFlight == MQTTOutputSink.outputWindow && sink.backlog == 500, "\(acks.inFlight) in flight, \(sink.backlog) held")
        sink.publishAcknowledgement(topic: "mobility/v1/users/jamie/acks", payload: CommitAckPayload.bytes(user: "jamie", lastID: "s-1"))
        #expect(acks.inFlight == MQTTOutputSink.outputWindow + 1, "the acknowledgement waited behind the outputs")
        broker.signal(SIGCONT)
        #expect(
            eventually(timeout: 20) {
                _ = sink.publish([])
                sink.retryAcknowledgements()
                return acks.inFlight == 0 && sink.backlog == 0 && sink.acknowledgementsUnanswered == 0
            }, "\(acks.inFlight) in flight, \(sink.backlog) held, \(sink.acknowledgementsUnanswered) acknowledgements unanswered")
    }
}
