import Foundation
import MQTTTransport
import Synchronization
import TestSupport
import Testing

@testable import MobilityDaemon

/// The daemon's services against a real broker.
@Suite(.serialized) struct DaemonServicesTests {
    /// The publisher's stop waits for the broker's answers only while connected: disconnected,
    /// with an acknowledgement unanswered, it stops at once (what it did not deliver is the next
    /// run's to publish) instead of waiting out its 5 s bound — which held up a run stopped to
    /// hand its partitions over.
    @Test func aDisconnectedPublisherStopsWithoutWaitingForAnswers() throws {
        let broker = try MosquittoBroker()
        let acks = PublishTracker()
        var c = MQTTClientConfiguration(broker: try BrokerURL(parsing: broker.url), clientID: "stop-test-pub")
        c.cleanSession = true
        let client = try MQTTClient(c, onMessage: { _, _, _ in }, onPublished: { _, mid, reason in acks.answered(mid: mid, reasonCode: reason) })
        try client.start()
        #expect(eventually(timeout: 5) { client.isConnected })
        let sink = MQTTOutputSink(client: client, acks: acks)
        broker.stop()
        #expect(eventually(timeout: 10) { !client.isConnected })
        sink.publishAcknowledgement(topic: "mobility/v1/users/jamie/acks", payload: CommitAckPayload.bytes(user: "jamie", lastID: "s-1"))
        #expect(sink.acknowledgementsUnanswered == 1)
        let settled = Atomic<Bool>(false)
        let service = PublisherService(
            publisher: client, sink: sink, acks: acks, statusTopic: "mobility/v1/daemon/t/status", clock: .system, log: Logger(format: .logfmt, level: .error)
        ) { settled.store(true, ordering: .relaxed) }
        let began = Date()
        service.stop()
        #expect(Date().timeIntervalSince(began) < 2, "the stop waited for a broker that is not connected")
        let wasSettled = settled.load(ordering: .relaxed)
        #expect(wasSettled)
    }

    /// The ack flush runs once for the pokes that came before it started (a burst of answers is
    /// one deletion), again for a poke while it runs, and never after its stop. The bursts are
    /// made while a run is held, so that how fast the test's thread pokes cannot split them.
    @Test func aDeferredTaskRunsOnceForThePokesBeforeItStarted() {
        let runs = Atomic<Int>(0)
        let inRun = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let task = DeferredTask(name: "test", label: "test", delay: .milliseconds(20)) {
            runs.add(1, ordering: .relaxed)
            inRun.signal()
            release.wait()
        }
        task.poke()
        #expect(inRun.wait(timeout: .now() + 5) == .success)  // the first run is under way
        for _ in 0..<100 { task.poke() }  // during it: one more run for all of them
        release.signal()
        #expect(inRun.wait(timeout: .now() + 5) == .success)  // the second
        for _ in 0..<100 { task.poke() }  // during it: a third
        release.signal()
        #expect(inRun.wait(timeout: .now() + 5) == .success)
        release.signal()
        #expect(eventually(timeout: 5) { runs.load(ordering: .relaxed) == 3 })
        task.stop()
        task.poke()
        // A run would come 20 ms after the poke: none within 300 ms, and no fourth run of the bursts.
        Thread.sleep(forTimeInterval: 0.3)
        #expect(runs.load(ordering: .relaxed) == 3)
    }
}
