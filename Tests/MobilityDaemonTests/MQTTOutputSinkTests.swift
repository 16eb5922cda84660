import Foundation
import MQTTTransport
import StateStore
import Synchronization
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

    /// A sink on a connected publisher to `broker`, and its tracker (the caller stops the client).
    private func connectedSink(_ broker: MosquittoBroker) throws -> (PublishTracker, MQTTClient, MQTTOutputSink) {
        let acks = PublishTracker()
        let client = try publisher(broker, acks: acks)
        return (acks, client, MQTTOutputSink(client: client, acks: acks))
    }

    /// Commit acknowledgements made while the publisher is disconnected are published once it is
    /// connected again, the latest of each user only; then none is left unanswered.
    @Test func acknowledgementsMadeWhileDisconnectedArePublishedAfterTheReconnect() throws {
        let broker = try MosquittoBroker()
        let (_, client, sink) = try connectedSink(broker)
        defer { client.stop() }
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
    /// of the publishes in flight, whatever the acknowledgements in flight: a commit
    /// acknowledgement made after the backlog reaches the broker before the outputs held back
    /// (else it would reach its gateway only after the whole backlog, long enough for the gateway
    /// to re-send what it does not cover), and the held outputs go as the broker answers, without
    /// waiting for another commit.
    @Test func acknowledgementsAreNotHeldBehindABacklogOfOutputs() throws {
        let broker = try MosquittoBroker()
        let (acks, client, sink) = try connectedSink(broker)
        defer { client.stop() }
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/acks", "mobility/v1/users/+/rejected"])
        broker.signal(SIGSTOP)
        defer { broker.signal(SIGCONT) }
        // Acknowledgements in flight beyond the outputs' window do not take the outputs' room.
        for k in 0..<(MQTTOutputSink.outputWindow + 500) {
            sink.publishAcknowledgement(topic: "mobility/v1/users/a\(k)/acks", payload: CommitAckPayload.bytes(user: "a\(k)", lastID: "s-\(k)"))
        }
        let items = (0..<(MQTTOutputSink.outputWindow + 500)).map {
            StateStore.OutboxItem(id: Int64($0 + 1), topic: "mobility/v1/users/u\($0)/rejected", payload: [0x7b, 0x7d], retain: false)
        }
        #expect(sink.publish(items) == 0)
        #expect(acks.outputsInFlight == MQTTOutputSink.outputWindow && sink.backlog == 500, "\(acks.outputsInFlight) outputs in flight, \(sink.backlog) held")
        sink.publishAcknowledgement(topic: "mobility/v1/users/jamie/acks", payload: CommitAckPayload.bytes(user: "jamie", lastID: "s-1"))
        #expect(acks.inFlight == 2 * (MQTTOutputSink.outputWindow + 500) - 500 + 1, "the acknowledgement waited behind the outputs")
        broker.signal(SIGCONT)
        #expect(
            eventually(timeout: 30) { acks.inFlight == 0 && sink.backlog == 0 && sink.acknowledgementsUnanswered == 0 },
            "\(acks.inFlight) in flight, \(sink.backlog) held, \(sink.acknowledgementsUnanswered) acknowledgements unanswered")
        let total = 2 * (MQTTOutputSink.outputWindow + 500) + 1
        #expect(eventually(timeout: 10) { rec.messages().count >= total }, "\(rec.messages().count) of \(total) received")
        let topics = rec.messages().map(\.topic)
        let jamie = topics.firstIndex(of: "mobility/v1/users/jamie/acks")
        let firstHeld = topics.firstIndex(of: "mobility/v1/users/u\(MQTTOutputSink.outputWindow)/rejected")
        #expect(jamie != nil && firstHeld != nil && jamie! < firstHeld!, "the acknowledgement at \(jamie ?? -1), the first held output at \(firstHeld ?? -1)")
    }

    /// A stopping run's publisher waits for the answers to what it sent, not for its backlog: the
    /// outputs held back stay held (the outbox keeps them for the next run), although each answer
    /// would otherwise send more — a run handing its partitions over would wait out its bound.
    @Test func aStoppingPublisherWaitsForWhatItSentNotForItsBacklog() throws {
        let broker = try MosquittoBroker()
        let (acks, client, sink) = try connectedSink(broker)
        broker.signal(SIGSTOP)
        defer { broker.signal(SIGCONT) }
        let items = (0..<(MQTTOutputSink.outputWindow + 1500)).map {
            StateStore.OutboxItem(id: Int64($0 + 1), topic: "mobility/v1/users/u\($0)/rejected", payload: [0x7b, 0x7d], retain: false)
        }
        #expect(sink.publish(items) == 0)
        #expect(acks.outputsInFlight == MQTTOutputSink.outputWindow && sink.backlog == 1500)
        let settled = Atomic<Int>(-1)
        let service = PublisherService(
            publisher: client, sink: sink, acks: acks, statusTopic: "mobility/v1/daemon/t/status", clock: .system, log: Logger(format: .logfmt, level: .error)
        ) { settled.store(acks.drain().count, ordering: .relaxed) }
        // The broker answers once the stop holds the outputs.
        Thread { [sink, broker] in
            _ = eventually(timeout: 5) { sink.holdsOutputs }
            broker.signal(SIGCONT)
        }.start()
        let began = Date()
        service.stop()
        #expect(Date().timeIntervalSince(began) < 4.5, "the stop waited out its bound")
        #expect(sink.backlog == 1500, "\(sink.backlog) held: the backlog was sent during the stop")
        let answered = settled.load(ordering: .relaxed)
        #expect(answered == MQTTOutputSink.outputWindow, "\(answered) outputs answered and forgotten")
    }
}
