import Foundation
import Synchronization

/// How the tools (`mobility-sim`, `mobilityctl`) reach a broker: its URL, TLS files, protocol version and (for a secured
/// broker) the accounts to log in with.
package struct BrokerAccess: Sendable {
    /// The broker.
    package var broker: BrokerURL
    /// Accounts and passwords; nil: anonymous, one connection for every user (a local broker).
    package var credentials: BrokerCredentials?
    /// CA certificate for `mqtts://` (system store when nil).
    package var caFile: String?
    /// Client certificate and key for `mqtts://` (mutual TLS).
    package var certFile: String?, keyFile: String?
    /// MQTT protocol version. Under 5 the broker answers a refused publish with a reason code.
    package var protocolVersion: MQTTClientConfiguration.ProtocolVersion

    /// Creates access settings.
    package init(
        broker: BrokerURL, credentials: BrokerCredentials? = nil, caFile: String? = nil, certFile: String? = nil,
        keyFile: String? = nil, protocolVersion: MQTTClientConfiguration.ProtocolVersion = .v311
    ) {
        self.broker = broker
        self.credentials = credentials
        self.caFile = caFile
        self.certFile = certFile
        self.keyFile = keyFile
        self.protocolVersion = protocolVersion
    }

    /// Connects (as `account`, whose password must be in ``credentials``) and waits up to
    /// `timeout` for the broker's answer.
    package func connect(
        account: String?, clientID: String, subscriptions: [String] = [],
        onMessage: @escaping @Sendable (String, [UInt8]) -> Void = { _, _ in }
    ) throws(BrokerConnectionError) -> BrokerConnection {
        let c = try start(account: account, clientID: clientID, subscriptions: subscriptions, onMessage: onMessage)
        try c.awaitLogin(timeout: 10)
        return c
    }

    /// Connects a reader (`verify` reads alerts with it) as `account` (nil: anonymous), subscribed
    /// to `filters`; throws (exit 1) when the login is refused or the broker does not answer.
    package func reader(
        account: String?, filters: [String],
        onMessage: @escaping @Sendable (String, [UInt8]) -> Void
    ) throws(BrokerConnectionError) -> BrokerConnection {
        let c = try connect(account: account, clientID: "mobility-sim-\(getpid())-sub", subscriptions: filters, onMessage: onMessage)
        // From the SUBACK on, what is published on the filters reaches this connection.
        let deadline = Date().addingTimeInterval(10)
        while !c.client.isSubscribed && Date() < deadline { usleep(2_000) }
        guard c.client.isSubscribed else {
            c.stop()
            throw BrokerConnectionError("the broker at \(broker) did not answer the subscription of \(account ?? "an anonymous client")", exitCode: 1)
        }
        return c
    }

    /// Connects a publisher for one-off commands (`mobilityctl ack`) as `account` (nil: anonymous).
    package func commander(account: String?) throws(BrokerConnectionError) -> BrokerConnection {
        try connect(account: account, clientID: "mobilityctl-\(getpid())")
    }

    /// Starts a connection without waiting for the broker's answer (see ``BrokerConnection/awaitLogin(timeout:)``).
    package func start(
        account: String?, clientID: String, subscriptions: [String] = [],
        onMessage: @escaping @Sendable (String, [UInt8]) -> Void = { _, _ in }
    ) throws(BrokerConnectionError) -> BrokerConnection {
        var c = MQTTClientConfiguration(broker: broker, clientID: clientID)
        c.cleanSession = true
        c.sessionExpirySeconds = 0  // a tool keeps no session on the broker
        c.protocolVersion = protocolVersion
        c.subscriptions = subscriptions
        c.caFile = caFile
        c.certFile = certFile
        c.keyFile = keyFile
        if let account {
            guard let password = credentials?.password(for: account) else {
                throw BrokerConnectionError(
                    "\(credentials.map { "credentials file \($0.path)" } ?? "no --credentials file") has no line for \(account)", exitCode: 2)
            }
            c.username = account
            c.password = password
        }
        let ledger = PublishLedger()
        do {
            let client = try MQTTClient(c, onMessage: onMessage, onEvent: { ledger.event($0) }, onPublished: { ledger.answered($0, $1) })
            try client.start()
            return BrokerConnection(client: client, ledger: ledger, account: account, broker: broker)
        } catch {
            throw BrokerConnectionError("cannot connect to \(broker)\(account.map { " as \($0)" } ?? ""): \(error)", exitCode: 1)
        }
    }
}

/// Why a tool cannot reach the broker or publish: a message for the user and the exit code (1 failure, 2 usage).
package struct BrokerConnectionError: Error, CustomStringConvertible, Sendable {
    /// The message (never a password).
    package let description: String
    /// 1: the broker or network failed; 2: the options or files are wrong.
    package let exitCode: Int32
    package init(_ description: String, exitCode: Int32) {
        self.description = description
        self.exitCode = exitCode
    }
}

/// One MQTT connection of a tool, with what the broker answered.
package final class BrokerConnection: Sendable {
    /// The client (its counters and publishes).
    package let client: MQTTClient
    /// What the broker answered to its publishes.
    package let ledger: PublishLedger
    let account: String?
    let broker: BrokerURL

    init(client: MQTTClient, ledger: PublishLedger, account: String?, broker: BrokerURL) {
        self.client = client
        self.ledger = ledger
        self.account = account
        self.broker = broker
    }

    /// Waits for the connection; throws (exit 1) if the broker refused the login or did not answer.
    package func awaitLogin(timeout: TimeInterval) throws(BrokerConnectionError) {
        let deadline = Date().addingTimeInterval(timeout)
        while !client.isConnected && ledger.loginRefusal == nil && Date() < deadline { usleep(10_000) }
        if let refusal = ledger.loginRefusal {
            client.stop()
            throw BrokerConnectionError("the broker refused the login of \(account ?? "an anonymous client") at \(broker): \(refusal)", exitCode: 1)
        }
        guard client.isConnected else {
            client.stop()
            throw BrokerConnectionError(
                "cannot connect to \(broker)\(account.map { " as \($0)" } ?? "")"
                    + (ledger.lastProblem.map { ": \($0)" } ?? ""), exitCode: 1)
        }
    }

    /// Disconnects.
    package func stop() { client.stop() }

    /// Publishes the broker has acknowledged on this connection (counted on its network thread,
    /// before the messages delivered after the acknowledgement are handed on).
    package var acknowledgedCount: Int { client.acknowledgedCount }

    /// Publishes one message at QoS 1 (not retained) and waits for the broker's answer; throws
    /// (exit 1) when it refused the message (MQTT 5 reason code) or did not answer in time.
    package func publishConfirmed(topic: String, payload: [UInt8], timeout: TimeInterval = 10) throws(BrokerConnectionError) {
        let mid: Int32
        do { mid = try client.publish(topic: topic, payload: payload, qos: 1, retain: false) } catch {
            throw BrokerConnectionError("cannot publish to \(topic): \(error)", exitCode: 1)
        }
        ledger.published(mid, topic: topic)
        let deadline = Date().addingTimeInterval(timeout)
        while inFlight > 0 && Date() < deadline { usleep(5_000) }
        if let r = ledger.firstRefusal {
            throw BrokerConnectionError(
                "the broker refused the publish to \(r.topic) (reason code \(r.reason)); does the ACL let \(account ?? "this account") write it?", exitCode: 1)
        }
        guard inFlight == 0 else {
            throw BrokerConnectionError("the broker did not acknowledge the publish to \(topic) within \(Int(timeout)) s", exitCode: 1)
        }
    }

    /// Messages handed to the broker and not answered yet.
    package var inFlight: Int { client.publishedCount - client.acknowledgedCount - client.refusedCount }
}

/// What the broker answered to a connection's publishes, for the refusals' report: the topic of
/// each message in flight by message id, and the first refusal.
package final class PublishLedger: Sendable {
    fileprivate struct State {
        var inFlight: [Int32: String] = [:]
        /// Answers that arrived before `publish` returned the message id.
        var early: [Int32: Int32] = [:]
        var firstRefusal: (topic: String, reason: Int32)?
        var loginRefusal: String?
        var lastProblem: String?
    }
    private let state = Mutex(State())

    /// `publish` returned `mid` for `topic`.
    package func published(_ mid: Int32, topic: String) {
        state.withLock { s in
            if let reason = s.early.removeValue(forKey: mid) { s.note(topic, reason) } else { s.inFlight[mid] = topic }
        }
    }

    /// The broker answered `mid` (network thread).
    func answered(_ mid: Int32, _ reason: Int32) {
        state.withLock { s in
            if let topic = s.inFlight.removeValue(forKey: mid) { s.note(topic, reason) } else { s.early[mid] = reason }
        }
    }

    /// A connection event (network thread).
    func event(_ e: MQTTConnectionEvent) {
        state.withLock { s in
            switch e {
            case .refused(let error): s.loginRefusal = error.message
            case .disconnected(let reason): s.lastProblem = reason
            case .connected, .subscribed: break
            }
        }
    }

    /// The first publish the broker refused (MQTT 5 reason 0x80 or more).
    package var firstRefusal: (topic: String, reason: Int32)? { state.withLock { $0.firstRefusal } }
    /// Why the broker refused the login, if it did.
    var loginRefusal: String? { state.withLock { $0.loginRefusal } }
    /// The last reason the connection failed or dropped.
    var lastProblem: String? { state.withLock { $0.lastProblem } }
}

private extension PublishLedger.State {
    mutating func note(_ topic: String, _ reason: Int32) {
        if reason >= 0x80, firstRefusal == nil { firstRefusal = (topic, reason) }
    }
}
