import Foundation
import MQTTTransport
import Synchronization

/// A test MQTT client that records every message on its filters and can publish.
public final class MQTTRecorder: Sendable {
    /// A received message.
    public struct Message: Sendable {
        public let topic: String
        public let payload: [UInt8]
        public var text: String { String(decoding: payload, as: UTF8.self) }
    }

    private let received = MessageStore()
    private let box = Mutex<MQTTClient?>(nil)

    /// Connects to `url`, subscribes to `filters` and waits for the connection.
    public init(url: String, filters: [String], clientID: String = "test-\(UUID().uuidString.prefix(8))",
                cleanSession: Bool = true) throws {
        var c = MQTTClientConfiguration(broker: try BrokerURL(parsing: url), clientID: clientID)
        c.cleanSession = cleanSession
        c.subscriptions = filters
        c.reconnectMaxSeconds = 1
        let client = try MQTTClient(c, onMessage: { [received] t, p in received.append(Message(topic: t, payload: p)) })
        box.withLock { $0 = client }
        try client.start()
        guard eventually(timeout: 5, { client.isConnected }) else { throw HarnessError("test client could not connect to \(url)") }
        usleep(100_000) // let the SUBACK arrive
    }

    var client: MQTTClient { box.withLock { $0! } }

    /// Messages received so far, optionally only on topics with a prefix.
    public func messages(prefix: String = "") -> [Message] {
        received.all.filter { $0.topic.hasPrefix(prefix) }
    }

    /// Publishes at QoS 1.
    public func publish(_ topic: String, _ payload: String, retain: Bool = false) throws {
        try client.publish(topic: topic, payload: Array(payload.utf8), qos: 1, retain: retain)
    }

    /// Publishes raw bytes at QoS 1.
    public func publishBytes(_ topic: String, _ payload: [UInt8]) throws {
        try client.publish(topic: topic, payload: payload, qos: 1)
    }

    /// Disconnects.
    public func stop() { client.stop() }

    deinit { box.withLock { $0?.stop() } }
}

final class MessageStore: Sendable {
    private let items = Mutex<[MQTTRecorder.Message]>([])
    func append(_ m: MQTTRecorder.Message) { items.withLock { $0.append(m) } }
    var all: [MQTTRecorder.Message] { items.withLock { $0 } }
}
