import Foundation
import MQTTTransport
import Synchronization

/// A test MQTT client that records every message on its filters and can publish.
package final class MQTTRecorder: Sendable {
    /// A received message.
    package struct Message: Sendable {
        /// The topic it was published on.
        package let topic: String
        /// The payload bytes.
        package let payload: [UInt8]
        /// The payload decoded as UTF-8.
        package var text: String { String(decoding: payload, as: UTF8.self) }
    }

    private let received = MessageStore()
    private let box = Mutex<MQTTClient?>(nil)

    private let answers = AnswerStore()

    /// Connects to `url`, subscribes to `filters` and waits until the broker has answered the
    /// subscription (its SUBACK), so that every message published from then on is recorded.
    /// - Parameters:
    ///   - username, password, caFile, version: as a gateway or dashboard would log in.
    package init(
        url: String, filters: [String], clientID: String = "test-\(UUID().uuidString.prefix(8))",
        cleanSession: Bool = true, username: String? = nil, password: String? = nil, caFile: String? = nil,
        version: MQTTClientConfiguration.ProtocolVersion = .v311
    ) throws {
        var c = MQTTClientConfiguration(broker: try BrokerURL(parsing: url), clientID: clientID)
        c.cleanSession = cleanSession
        c.subscriptions = filters
        c.reconnectMaxSeconds = 1
        c.username = username
        c.password = password
        c.caFile = caFile
        c.protocolVersion = version
        barrierTopic = filters.first.map(MQTTRecorder.barrierTopic(matching:))
        let client = try MQTTClient(
            c,
            onMessage: { [received, barriers] t, p in
                if let token = MQTTRecorder.barrierToken(p) {
                    barriers.tokens.withLock { _ = $0.insert(token) }
                } else {
                    received.append(Message(topic: t, payload: p))
                }
            },
            onPublished: { [answers] mid, reason in answers.codes.withLock { $0[mid] = reason } })
        box.withLock { $0 = client }
        try client.start()
        guard eventually(timeout: 5, { client.isConnected }) else { throw HarnessError("test client could not connect to \(url)") }
        guard eventually(timeout: 5, { client.isSubscribed }) else { throw HarnessError("the broker at \(url) did not answer the subscription to \(filters)") }
    }

    private let barriers = BarrierStore()
    private let barrierTopic: String?
    private static let barrierPrefix = Array("mw-test-barrier ".utf8)

    /// Publishes a barrier message on a topic of the first filter and waits until it comes back.
    /// Every message the broker accepted before the barrier was published has then been delivered
    /// (the broker keeps one subscriber's messages in order), so "nothing more arrives" is a
    /// fact, not a guess. Barrier messages are not recorded. False when it did not come back in time.
    package func barrier(timeout: TimeInterval = 10) throws -> Bool {
        guard let barrierTopic else { throw HarnessError("a recorder without filters cannot receive a barrier") }
        let token = UUID().uuidString
        try client.publish(topic: barrierTopic, payload: MQTTRecorder.barrierPrefix + Array(token.utf8), qos: 1)
        return eventually(timeout: timeout) { barriers.tokens.withLock { $0.contains(token) } }
    }

    /// A topic that `filter` matches: each `+` and a trailing `#` stand for one level `mw-barrier`.
    static func barrierTopic(matching filter: String) -> String {
        filter.split(separator: "/", omittingEmptySubsequences: false).map { $0 == "+" || $0 == "#" ? "mw-barrier" : String($0) }
            .joined(separator: "/")
    }

    static func barrierToken(_ payload: [UInt8]) -> String? {
        guard payload.starts(with: barrierPrefix) else { return nil }
        return String(decoding: payload.dropFirst(barrierPrefix.count), as: UTF8.self)
    }

    /// Publishes at QoS 1 and waits for the broker's answer: its MQTT 5 reason code (0 accepted,
    /// 135 not authorised, …; always 0 under 3.1.1), or nil when none came within `timeout`.
    package func publishAwaitingAnswer(_ topic: String, _ payload: String, retain: Bool = false, timeout: TimeInterval = 5) throws -> Int32? {
        let mid = try client.publish(topic: topic, payload: Array(payload.utf8), qos: 1, retain: retain)
        var answer: Int32?
        _ = eventually(timeout: timeout) {
            answer = answers.codes.withLock { $0[mid] }; return answer != nil
        }
        answers.codes.withLock { _ = $0.removeValue(forKey: mid) }
        return answer
    }

    /// This recorder's publishes the broker has acknowledged (QoS 1).
    package var acknowledgedCount: Int { client.acknowledgedCount }

    /// Successful connections so far (more than 1: it reconnected).
    package var connectionCount: Int { client.connectionCount }

    /// Whether the connection is up.
    package var isConnected: Bool { client.isConnected }

    var client: MQTTClient { box.withLock { $0! } }

    /// Messages received so far, optionally only on topics with a prefix.
    package func messages(prefix: String = "") -> [Message] {
        received.all.filter { $0.topic.hasPrefix(prefix) }
    }

    /// Publishes at QoS 1.
    package func publish(_ topic: String, _ payload: String, retain: Bool = false) throws {
        try client.publish(topic: topic, payload: Array(payload.utf8), qos: 1, retain: retain)
    }

    /// Publishes raw bytes at QoS 1.
    package func publishBytes(_ topic: String, _ payload: [UInt8]) throws {
        try client.publish(topic: topic, payload: payload, qos: 1)
    }

    /// Disconnects.
    package func stop() { client.stop() }

    deinit { box.withLock { $0?.stop() } }
}

final class MessageStore: Sendable {
    private let items = Mutex<[MQTTRecorder.Message]>([])
    func append(_ m: MQTTRecorder.Message) { items.withLock { $0.append(m) } }
    var all: [MQTTRecorder.Message] { items.withLock { $0 } }
}

final class AnswerStore: Sendable {
    let codes = Mutex<[Int32: Int32]>([:])
}

final class BarrierStore: Sendable {
    let tokens = Mutex<Set<String>>([])
}
