import MQTTTransport
import StateStore
import Synchronization

/// Publishes committed outbox items at QoS 1, recording message ids so that acknowledged items
/// can be deleted from the outbox. Items libmosquitto refuses (e.g. while disconnected) are kept
/// and retried, in order, before anything newer.
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
            var sent = 0
            for item in pending {
                guard let mid = try? client.publish(topic: item.topic, payload: item.payload, qos: 1, retain: item.retain) else { break }
                acks.published(mid: mid, id: item.id)
                sent += 1
            }
            pending.removeFirst(sent)
            return pending.count
        }
    }
}
