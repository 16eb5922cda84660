import Foundation
import Ingest
import MQTTTransport
import MobilityModel
import MobilityWire
import RuleEngine

/// The simulated gateways' connections, made before anything is published.
///
/// Anonymous (no credentials): one connection publishes every user's traffic, as a local test
/// broker allows. With credentials: one login per user, as the user id — the shipped broker binds
/// client ids to usernames (a second connection of an account kicks the first) and lets a gateway
/// publish only its own user's topics and read only its own `acks` — so one connection (and one
/// libmosquitto thread) per user. MQTT keeps order per connection, so each user's messages keep
/// their order; messages of different users may interleave differently than in the input.
package final class Gateways: Sendable {
    private let access: BrokerAccess
    private let shared: BrokerConnection?
    private let perUser: [String: BrokerConnection]
    private static let layout = TopicLayout()

    /// The users whose traffic `records` are; with `needUser`, every record's topic must name one.
    package static func users(of records: [TrafficRecord], needUser: Bool) throws(BrokerConnectionError) -> [String] {
        var users = Set<String>()
        for r in records {
            if case .inbound(let user, _) = layout.parse(r.topic) { users.insert(user); continue }
            if needUser { throw BrokerConnectionError("\(r.topic) is no user's input topic, so no gateway account can publish it", exitCode: 2) }
        }
        return users.sorted()
    }

    /// Connects for `users`; with `onAck`, each connection subscribes to its users' `acks` (the
    /// anonymous one to every user's). Throws before connecting anything (exit 2) when a user has
    /// no credentials line, and (exit 1) when a login is refused or the broker does not answer.
    package init(access: BrokerAccess, users: [String], onAck: (@Sendable ([UInt8]) -> Void)? = nil) throws(BrokerConnectionError) {
        self.access = access
        let onMessage: @Sendable (String, [UInt8]) -> Void = { _, payload in onAck?(payload) }
        guard let credentials = access.credentials else {
            shared = try access.connect(
                account: nil, clientID: "mobility-sim-\(getpid())-pub",
                subscriptions: onAck == nil ? [] : ["\(Gateways.layout.root)/users/+/acks"], onMessage: onMessage)
            perUser = [:]
            usleep(100_000)  // let the SUBACK arrive
            return
        }
        let missing = credentials.missing(users)
        guard missing.isEmpty else {
            throw BrokerConnectionError(
                "credentials file \(credentials.path) has no line for \(missing.joined(separator: ", ")) "
                    + "(each gateway logs in as its user id)", exitCode: 2)
        }
        var started: [String: BrokerConnection] = [:]
        do {
            for u in users {
                started[u] = try access.start(
                    account: u, clientID: "mobility-sim-\(getpid())-\(u)",
                    subscriptions: onAck == nil ? [] : [Gateways.layout.acks(u)], onMessage: onMessage)
            }
            for u in users { try started[u]!.awaitLogin(timeout: 10) }
        } catch {
            for c in started.values { c.client.stop() }
            throw error
        }
        shared = nil
        perUser = started
        usleep(100_000)  // let the SUBACKs arrive
    }

    private func connection(for topic: String) throws(BrokerConnectionError) -> BrokerConnection {
        if let shared { return shared }
        guard case .inbound(let user, _) = Gateways.layout.parse(topic), let c = perUser[user] else {
            throw BrokerConnectionError("no gateway connection publishes \(topic)", exitCode: 2)
        }
        return c
    }

    private var all: [BrokerConnection] { shared.map { [$0] } ?? Array(perUser.values) }

    /// Publishes `records` in order at QoS 1 and waits (up to 120 s) for the broker's answers.
    /// `factor` nil: as fast as the broker acknowledges (at most 500 in flight per connection);
    /// else each record at its time in `times`, scaled (1: real time).
    package func play(_ records: [TrafficRecord], times: [Timestamp]? = nil, factor: Double? = nil) throws(BrokerConnectionError) -> PlayReport {
        precondition(factor == nil || times?.count == records.count, "timed play needs a time per record")
        let connections = all
        let acked0 = connections.reduce(0) { $0 + $1.client.acknowledgedCount }
        let refused0 = connections.reduce(0) { $0 + $1.client.refusedCount }
        let began = Date()
        for (n, r) in records.enumerated() {
            if let factor, let times {
                let due = Double(times[n].milliseconds - times[0].milliseconds) / 1000 / factor
                let wait = due - Date().timeIntervalSince(began)
                if wait > 0 { usleep(UInt32(min(wait, 3600) * 1e6)) }
            }
            let c = try connection(for: r.topic)
            while c.inFlight > 500 { usleep(200) }
            // A broker restart refuses publishes until the client reconnects: retry for up to a minute.
            var attempt = 0
            while true {
                do {
                    let mid = try c.client.publish(topic: r.topic, payload: r.payload, qos: 1)
                    c.ledger.published(mid, topic: r.topic)
                    break
                } catch {
                    attempt += 1
                    if attempt > 600 { throw BrokerConnectionError("\(error)", exitCode: 1) }
                    usleep(100_000)
                }
            }
        }
        func answered() -> (acked: Int, refused: Int) {
            (connections.reduce(0) { $0 + $1.client.acknowledgedCount } - acked0, connections.reduce(0) { $0 + $1.client.refusedCount } - refused0)
        }
        let deadline = Date().addingTimeInterval(120)
        while answered().acked + answered().refused < records.count && Date() < deadline { usleep(1000) }
        let (acked, refused) = answered()
        let first = refused == 0 ? nil : connections.compactMap { $0.ledger.firstRefusal }.first
        return PlayReport(
            published: records.count, acknowledged: acked, refused: refused, firstRefusal: first,
            seconds: Date().timeIntervalSince(began))
    }

    /// Disconnects every connection.
    package func stop() { for c in all { c.client.stop() } }
}

/// What the broker answered to one ``Gateways/play(_:times:factor:)``.
package struct PlayReport: Sendable, CustomStringConvertible {
    /// Messages published.
    package var published: Int
    /// Messages the broker accepted.
    package var acknowledged: Int
    /// Messages the broker refused (MQTT 5 reason 0x80 or more; a 3.1.1 broker cannot say so).
    package var refused: Int
    /// The first refused message's topic and reason code (per connection: the first one seen).
    package var firstRefusal: (topic: String, reason: Int32)?
    /// Wall time taken.
    package var seconds: Double

    /// Every message was accepted.
    package var complete: Bool { acknowledged >= published }

    /// `published N messages (N acknowledged) in S s`, then any refusals.
    package var description: String {
        var s = "published \(published) messages (\(acknowledged) acknowledged) in \(String(format: "%.2f", seconds)) s"
        if refused > 0 {
            s += "; \(refused) refused by the broker"
            if let f = firstRefusal { s += " (first: \(f.topic), reason \(f.reason): \(MQTTError.reasonDescription(f.reason)))" }
        }
        if published > acknowledged + refused { s += "; \(published - acknowledged - refused) not answered within 120 s" }
        return s
    }
}
