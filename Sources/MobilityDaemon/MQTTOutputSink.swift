import MQTTTransport
import StateStore
import Synchronization

/// Publishes committed outbox items at QoS 1, recording message ids so that acknowledged items
/// can be deleted from the outbox. Items libmosquitto refuses for now (e.g. while disconnected)
/// are kept and retried, in order, before anything newer; an item it can never send (too large
/// for the broker, an invalid topic) is handed to the tracker as a refusal and parked, so it
/// cannot hold up everything behind it.
final class MQTTOutputSink: OutputSink {
    let client: MQTTClient
    let acks: AckTracker
    private let retry = Mutex<[StateStore.OutboxItem]>([])
    init(client: MQTTClient, acks: AckTracker) {
        self.client = client
        self.acks = acks
    }

    /// Items waiting for a retry.
    var backlog: Int { retry.withLock { $0.count } }

    func publish(_ items: [StateStore.OutboxItem]) -> Int {
        retry.withLock { pending in
            pending += items
            var done = 0, failed = 0
            for item in pending {
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
            return failed
        }
    }

    /// Publishes an output that is not in the outbox (a commit acknowledgement, the status),
    /// registering it so that the broker's answer is counted.
    func publishUntracked(topic: String, payload: [UInt8], retain: Bool) {
        guard let mid = try? client.publish(topic: topic, payload: payload, qos: 1, retain: retain) else { return }
        acks.published(mid: mid, id: nil, topic: topic)
    }
}
