import Dispatch
import MQTTTransport
import StateStore
import Synchronization

/// Publishes committed outbox items at QoS 1, recording message ids so that acknowledged items
/// can be deleted from the outbox. Items are held back, in order, while the publisher is
/// disconnected or ``outputWindow`` publishes await their answer, and while libmosquitto refuses
/// them for now; they are retried before anything newer. An item it can never send (too large
/// for the broker, an invalid topic) is handed to the tracker as a refusal and parked, so it
/// cannot hold up everything behind it.
///
/// Why hold back: libmosquitto 2.0.11 queues a QoS 1 publish even while disconnected, with a
/// fresh 16-bit message id. Past 65 535 unanswered publishes the ids wrap, and the answer to an
/// old message would acknowledge (delete from the outbox) a newer one the broker never had.
final class MQTTOutputSink: OutputSink {
    let client: MQTTClient
    let acks: PublishTracker
    private let retry = Mutex<[StateStore.OutboxItem]>([])
    /// The commit acknowledgements the broker has not answered yet (held across their publish, so
    /// that the latest of a user is never overtaken by an earlier one on the connection).
    private let ledger = Mutex(CommitAckLedger())
    /// Items held (``backlog``), readable without the lock on every broker answer.
    private let held = Atomic<Int>(0)
    /// Whether a drain of the held items is on its way (one at a time).
    private let draining = Atomic<Bool>(false)
    /// Set by ``holdOutputs()``: outbox items are no longer sent (the run is stopping).
    private let holding = Atomic<Bool>(false)

    init(client: MQTTClient, acks: PublishTracker) {
        self.client = client
        self.acks = acks
        // Each answer makes room: held items go at the broker's pace, not only at the next
        // commit or housekeeping tick (off the network thread, one drain at a time).
        acks.whenAnswered { [weak self] in
            guard let self, held.load(ordering: .relaxed) > 0, !holding.load(ordering: .relaxed),
                !draining.exchange(true, ordering: .acquiringAndReleasing)
            else { return }
            DispatchQueue.global().async {
                self.draining.store(false, ordering: .releasing)
                _ = self.publish([])
            }
        }
    }

    /// At most this many publishes await the broker's answer at once (well under the 65 535
    /// message ids, which must not wrap while any is in flight).
    static let maxInFlight = 30_000

    /// At most this many of them are outbox items (``PublishTracker/outputsInFlight``; however
    /// many acknowledgements are in flight): the rest of ``maxInFlight`` is kept for the
    /// commit acknowledgements and staff receipts, which would otherwise wait behind a backlog
    /// of outputs (a connection is one ordered stream: behind 30 000 outputs, at the 800
    /// answers a second of a NATS cluster with three replicas, an acknowledgement waits 37 s —
    /// long enough for gateways to re-send what it does not cover, whose samples' refusals
    /// lengthen the backlog). Behind 500, it waits about 0.6 s, and so does a stopping
    /// run for the answers to what it sent (``PublisherService``); the broker is kept busy all
    /// the same (on loopback an answer comes back in well under a millisecond).
    static let outputWindow = 500

    /// Items waiting for a retry.
    var backlog: Int { retry.withLock { $0.count } }

    /// Sends no more outbox items (those held stay in the outbox, for the next run to publish):
    /// a stopping run waits only for the answers to what it sent, not for its backlog to drain.
    func holdOutputs() {
        // Under the lock: a publish under way finishes first, so its items are counted in flight.
        retry.withLock { _ in holding.store(true, ordering: .releasing) }
    }
    /// Whether ``holdOutputs()`` was called.
    var holdsOutputs: Bool { holding.load(ordering: .acquiring) }

    func publish(_ items: [StateStore.OutboxItem]) -> Int {
        retry.withLock { pending in
            pending += items
            held.store(pending.count, ordering: .relaxed)
            guard client.isConnected else { return 0 }  // held: the housekeeping timer retries
            guard !holding.load(ordering: .acquiring) else { return 0 }  // held for the next run, from the outbox
            var done = 0, failed = 0
            var room = min(MQTTOutputSink.outputWindow - acks.outputsInFlight, MQTTOutputSink.maxInFlight - acks.inFlight)
            for item in pending {
                guard room > 0 else { break }
                room -= 1
                do throws(MQTTError) {
                    let mid = try client.publish(topic: item.topic, payload: item.payload, qos: 1, retain: item.retain)
                    acks.published(mid: mid, id: item.id, topic: item.topic)
                } catch {
                    failed += 1
                    guard case .library(let rc) = error.code, MQTTClient.publishFailureIsPermanent(rc) else { break }
                    acks.failedPermanently(id: item.id, topic: item.topic, rc: rc)
                }
                done += 1
            }
            pending.removeFirst(done)
            held.store(pending.count, ordering: .relaxed)
            return failed
        }
    }

    /// Publishes an output that is not in the outbox (a staff receipt), registering it so that
    /// the broker's answer is counted. Not sent while disconnected or at ``maxInFlight`` (see above).
    func publishUntracked(topic: String, payload: [UInt8], retain: Bool) {
        guard client.isConnected, acks.inFlight < MQTTOutputSink.maxInFlight else { return }
        guard let mid = try? client.publish(topic: topic, payload: payload, qos: 1, retain: retain) else { return }
        acks.published(mid: mid, id: nil, topic: topic)
    }

    /// Publishes a commit acknowledgement (retained) and keeps it until the broker answers: one
    /// not sent now (disconnected, at ``maxInFlight``) or sent on a connection that dropped before
    /// the answer is published again by ``retryAcknowledgements()``, unless a later one for the
    /// same user replaced it.
    func publishAcknowledgement(topic: String, payload: [UInt8]) {
        ledger.withLock { l in
            settleAnswered(&l)
            let serial = l.latest(topic: topic, payload: payload)
            _ = send(topic: topic, payload: payload, serial: serial, &l)
        }
    }

    /// Publishes the commit acknowledgements not yet published on the current connection whose
    /// answer is still missing (called by the housekeeping timer).
    func retryAcknowledgements() {
        ledger.withLock { l in
            settleAnswered(&l)
            let connection = client.connectionCount
            guard client.isConnected else { return }
            for (topic, e) in l.due(connection: connection) {
                guard send(topic: topic, payload: e.payload, serial: e.serial, &l) else { break }
            }
        }
    }

    /// Commit acknowledgements the broker has not answered yet.
    var acknowledgementsUnanswered: Int {
        ledger.withLock { l in
            settleAnswered(&l)
            return l.count
        }
    }

    private func settleAnswered(_ l: inout CommitAckLedger) {
        for a in acks.drainAnsweredAcks() { l.settled(topic: a.topic, serial: a.serial) }
    }

    /// Hands one acknowledgement to the client; false when it was not (it stays due).
    private func send(topic: String, payload: [UInt8], serial: UInt64, _ l: inout CommitAckLedger) -> Bool {
        // Read before the connected check: a reconnect in between makes it due once more, never less.
        let connection = client.connectionCount
        guard client.isConnected, acks.inFlight < MQTTOutputSink.maxInFlight else { return false }
        do throws(MQTTError) {
            let mid = try client.publish(topic: topic, payload: payload, qos: 1, retain: true)
            acks.published(mid: mid, id: nil, topic: topic, ackSerial: serial)
            l.sent(topic: topic, serial: serial, connection: connection)
            return true
        } catch {
            // One libmosquitto can never send is forgotten (it would be retried forever).
            if case .library(let rc) = error.code, MQTTClient.publishFailureIsPermanent(rc) { l.settled(topic: topic, serial: serial) }
            return false
        }
    }
}
