import CMosquitto
import Foundation
import MQTTTransport
import Synchronization
import TestSupport
import Testing

@Suite struct BrokerURLTests {
    @Test(arguments: [
        ("mqtt://127.0.0.1:1883", "127.0.0.1", Int32(1883), false),
        ("mqtt://broker", "broker", 1883, false),
        ("mqtts://broker.example:8884", "broker.example", 8884, true),
        ("mqtts://broker", "broker", 8883, true),
        ("mqtt://[::1]:1884", "::1", 1884, false)
    ])
    func parses(url: String, host: String, port: Int32, tls: Bool) throws {
        let u = try BrokerURL(parsing: url)
        #expect(u.host == host && u.port == port && u.tls == tls)
    }

    @Test(arguments: ["http://x", "mqtt://", "mqtt://host:0", "mqtt://host:99999", "mqtt://host:port", "tcp://h:1"])
    func rejects(url: String) {
        #expect(throws: MQTTError.self) { try BrokerURL(parsing: url) }
    }

    @Test func aListIsTheNodesOfOneClusterInTheOrderTried() throws {
        #expect(try BrokerURL.list(parsing: "mqtt://a") == [BrokerURL(parsing: "mqtt://a:1883")])
        #expect(try BrokerURL.list(parsing: "mqtts://a:1, mqtts://b:2").map(\.description) == ["mqtts://a:1", "mqtts://b:2"])
        for (bad, says) in [
            ("mqtt://a,", "empty broker URL"), ("mqtt://a,,mqtt://b", "empty broker URL"), ("mqtt://a,mqtts://b", "all mqtt:// or all mqtts://"),
            ("mqtt://a:1883,mqtt://a", "given twice"), ("mqtt://a,tcp://b", "must start with mqtt://")
        ] {
            #expect(throws: MQTTError.self, "\(bad)") { try BrokerURL.list(parsing: bad) }
            do { _ = try BrokerURL.list(parsing: bad) } catch { #expect(error.description.contains(says), "\(bad): \(error)") }
        }
    }
}

@Suite(.serialized) struct MQTTClientTests {
    @Test func publishesAndReceivesThroughARealBroker() throws {
        let broker = try MosquittoBroker()
        let rec = try MQTTRecorder(url: broker.url, filters: ["t/#"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        for i in 0..<100 { try pub.publish("t/\(i % 3)", "m\(i)") }
        #expect(eventually { rec.messages().count == 100 })
        #expect(rec.messages().map(\.text) == (0..<100).map { "m\($0)" })  // one publisher: in order
    }

    @Test(arguments: [MQTTClientConfiguration.ProtocolVersion.v311, .v5])
    func persistentSessionQueuesWhileOffline(version: MQTTClientConfiguration.ProtocolVersion) throws {
        let broker = try MosquittoBroker()
        let received = ReceivedCounter()
        var c = MQTTClientConfiguration(broker: try BrokerURL(parsing: broker.url), clientID: "persistent-\(version.rawValue)")
        c.protocolVersion = version
        c.subscriptions = ["q/#"]
        var client: MQTTClient? = try MQTTClient(c, onMessage: { _, _ in received.add() })
        try client!.start()
        #expect(eventually { client!.isSubscribed })
        client!.stop()
        client = nil
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        for i in 0..<50 { #expect(try pub.publishAwaitingAnswer("q/x", "m\(i)") == 0) }  // the broker has queued it for the session
        client = try MQTTClient(c, onMessage: { _, _ in received.add() })
        try client!.start()
        // Subscriptions survive in the session; queued QoS 1 messages are delivered on reconnect.
        #expect(eventually { received.value == 50 }, "got \(received.value) of 50 (MQTT \(version.rawValue))")
        client!.stop()
    }

    /// Callbacks are handed the client they belong to: the connect callback publishes on it, and a
    /// message callback drops its connection (the broker then delivers the message again).
    @Test func callbacksAreHandedTheirClient() throws {
        let broker = try MosquittoBroker()
        let rec = try MQTTRecorder(url: broker.url, filters: ["status"])
        var c = MQTTClientConfiguration(broker: try BrokerURL(parsing: broker.url), clientID: "handed")
        c.cleanSession = false
        c.subscriptions = ["in/#"]
        let deliveries = ReceivedCounter()
        let client = try MQTTClient(
            c,
            onMessage: { client, _, _ in
                deliveries.add()
                if deliveries.value == 1 { client.abortConnection() }  // not acknowledged: comes again
            },
            onEvent: { client, e in
                if case .connected = e { _ = try? client.publish(topic: "status", payload: Array("online".utf8), retain: false) }
            })
        try client.start()
        #expect(eventually { client.isSubscribed })
        #expect(eventually { rec.messages().first?.text == "online" })
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        #expect(try pub.publishAwaitingAnswer("in/x", "m") == 0)
        #expect(eventually(timeout: 10) { deliveries.value >= 2 && client.connectionCount >= 2 }, "delivered \(deliveries.value) times")
        #expect(rec.messages().filter { $0.text == "online" }.count >= 2, "online again on the reconnect")
        client.stop()
    }

    @Test func connectsWhenTheBrokerStartsAfterTheClient() throws {
        // libmosquitto's network thread waits forever for a first connection that failed
        // (eclipse-mosquitto/mosquitto#1903): the client must keep trying itself.
        let broker = try MosquittoBroker()
        broker.stop()
        var c = MQTTClientConfiguration(broker: try BrokerURL(parsing: broker.url), clientID: "late-broker")
        c.reconnectMaxSeconds = 1
        let events = EventLog()
        let client = try MQTTClient(c, onMessage: { _, _ in }, onEvent: { events.append($0) })
        try client.start()
        // A retry was made (one backoff later) and failed: the client is not connected and keeps trying.
        #expect(eventually { events.all.contains { if case .disconnected(let r) = $0 { r.contains("not reachable (") } else { false } } })
        #expect(!client.isConnected)
        try broker.start()
        #expect(eventually { client.isConnected })
        client.stop()
    }

    /// A client stopped from its own first-connect retry (a caller giving up on a broker that is
    /// not there) stops instead of waiting for that very thread to end.
    @Test func stopFromTheRetryThreadsOwnCallbackReturns() throws {
        let broker = try MosquittoBroker()
        broker.stop()
        var c = MQTTClientConfiguration(broker: try BrokerURL(parsing: broker.url), clientID: "gives-up")
        c.reconnectMaxSeconds = 1
        let stopped = ReceivedCounter()
        let client = try MQTTClient(
            c, onMessage: { _, _, _ in },
            onEvent: { client, e in
                if case .disconnected(let r) = e, r.contains("not reachable (") {
                    client.stop()
                    stopped.add()
                }
            })
        try client.start()
        #expect(eventually { stopped.value == 1 }, "stop() from the retry thread's callback did not return")
        #expect(!client.isConnected)
    }

    /// Each connection's network loop runs on a thread of its own named `mqtt-net` (not one of
    /// Dispatch's shared workers, which it would hold for the client's life).
    @Test func theNetworkLoopRunsOnItsOwnNamedThread() throws {
        let broker = try MosquittoBroker()
        let c = MQTTClientConfiguration(broker: try BrokerURL(parsing: broker.url), clientID: "named")
        func named() -> Int {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
            return tasks.filter { (try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8)) == "mqtt-net\n" }.count
        }
        let before = named()
        let client = try MQTTClient(c, onMessage: { _, _ in })
        try client.start()
        #expect(eventually { client.isConnected && named() == before + 1 })
        client.stop()
        #expect(eventually { named() == before })
    }

    /// A first connect that fails for a reason outside the client (here: the connection reset
    /// while sending CONNECT, seen once when a killed daemon restarted) is retried by the network
    /// thread; only the client's own misconfiguration stops `start()`.
    @Test func firstConnectFailuresAreRetriedUnlessTheSettingsAreWrong() {
        for rc in [
            MOSQ_ERR_CONN_LOST, MOSQ_ERR_ERRNO, MOSQ_ERR_NO_CONN, MOSQ_ERR_CONN_REFUSED, MOSQ_ERR_EAI,
            MOSQ_ERR_TLS, MOSQ_ERR_TLS_HANDSHAKE, MOSQ_ERR_PROTOCOL, MOSQ_ERR_TIMEOUT, MOSQ_ERR_UNKNOWN
        ] {
            #expect(MQTTClient.connectFailureIsRetryable(rc.rawValue), "\(rc)")
        }
        for rc in [MOSQ_ERR_INVAL, MOSQ_ERR_NOMEM, MOSQ_ERR_NOT_SUPPORTED, MOSQ_ERR_MALFORMED_UTF8] {
            #expect(!MQTTClient.connectFailureIsRetryable(rc.rawValue), "\(rc)")
        }
    }

    /// Refusals that retrying cannot change: credentials, authorisation, the protocol version.
    @Test func finalRefusals() {
        for rc: Int32 in [1, 4, 5] { #expect(MQTTClient.refusalIsFinal(rc, v5: false), "3.1.1 \(rc)") }
        for rc: Int32 in [2, 3] { #expect(!MQTTClient.refusalIsFinal(rc, v5: false), "3.1.1 \(rc)") }  // id rejected, server unavailable
        for rc: Int32 in [132, 134, 135] { #expect(MQTTClient.refusalIsFinal(rc, v5: true), "5 \(rc)") }
        for rc: Int32 in [136, 137, 159] { #expect(!MQTTClient.refusalIsFinal(rc, v5: true), "5 \(rc)") }  // unavailable, busy, rate
    }

    /// `isSubscribed` follows the SUBACK of the subscriptions made on each connection: false
    /// before, false while disconnected, true again once a reconnect's subscriptions are answered.
    @Test func isSubscribedFollowsTheSubackOfEachConnection() throws {
        let broker = try MosquittoBroker()
        let received = ReceivedCounter()
        var c = MQTTClientConfiguration(broker: try BrokerURL(parsing: broker.url), clientID: "suback")
        c.subscriptions = ["s/#", "other/+"]
        c.reconnectMaxSeconds = 1
        let client = try MQTTClient(c, onMessage: { _, _ in received.add() })
        #expect(!client.isSubscribed)
        try client.start()
        #expect(eventually { client.isSubscribed })
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        try pub.publish("s/1", "first")  // no wait between the flag and the publish: the subscription is live
        #expect(eventually { received.value == 1 })
        broker.stop()
        #expect(eventually { !client.isConnected })
        #expect(!client.isSubscribed)
        try broker.start()
        #expect(eventually { client.isSubscribed })
        #expect(client.connectionCount == 2)
        let pub2 = try MQTTRecorder(url: broker.url, filters: [])
        try pub2.publish("other/x", "second")
        #expect(eventually { received.value == 2 })
        client.stop()
        #expect(!client.isSubscribed)
    }

    @Test func reconnectsAfterBrokerRestart() throws {
        let broker = try MosquittoBroker()
        let received = ReceivedCounter()
        var c = MQTTClientConfiguration(broker: try BrokerURL(parsing: broker.url), clientID: "reconnect")
        c.subscriptions = ["r/#"]
        c.reconnectMaxSeconds = 1
        let client = try MQTTClient(c, onMessage: { _, _ in received.add() })
        try client.start()
        #expect(eventually { client.isConnected })
        broker.stop()
        #expect(eventually { !client.isConnected })
        try broker.start()
        #expect(eventually { client.isConnected && client.connectionCount == 2 && client.isSubscribed })
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        try pub.publish("r/1", "after restart")
        #expect(eventually { received.value == 1 })  // resubscribed in the connect callback
        client.stop()
    }
}

extension MQTTClientTests {
    /// A client given the nodes of a cluster moves to the next when the one it uses is lost,
    /// subscribes again there, and starts on a later one when the first is not there. Two
    /// independent mosquitto brokers stand in for two nodes (their sessions are not shared, which
    /// this test does not need).
    @Test func aLostBrokerIsLeftForTheNextOfTheCluster() throws {
        let first = try MosquittoBroker(), second = try MosquittoBroker()
        let received = ReceivedCounter()
        let events = EventLog()
        var c = MQTTClientConfiguration(broker: try BrokerURL(parsing: first.url), clientID: "fails-over")
        c.fallbacks = [try BrokerURL(parsing: second.url)]
        c.subscriptions = ["f/#"]
        c.reconnectMaxSeconds = 1
        let client = try MQTTClient(c, onMessage: { _, _ in received.add() }, onEvent: { events.append($0) })
        try client.start()
        #expect(eventually { client.isSubscribed })
        #expect(client.currentBroker == c.broker)
        first.stop()
        #expect(eventually { client.isSubscribed && client.connectionCount == 2 })
        #expect(client.currentBroker == c.fallbacks[0])
        #expect(
            events.all.contains { if case .connected(_, _, let b) = $0 { b == c.fallbacks[0] } else { false } },
            "the connect event names the node: \(events.all)")
        try MQTTRecorder(url: second.url, filters: []).publish("f/1", "on the second node")
        #expect(eventually { received.value == 1 })
        client.stop()

        // The first node down at the start: the client connects to the second at once.
        let late = try MQTTClient(c, onMessage: { _, _ in })
        try late.start()
        #expect(eventually { late.isConnected && late.connectionCount == 1 })
        #expect(late.currentBroker == c.fallbacks[0])
        late.stop()
    }
}

extension MQTTClientTests {
    /// Of three nodes, a client that loses its own goes to the next in order, and one that loses
    /// a fallback goes back to its own node first when that answers again (the lost one last).
    @Test func aClientTriesItsOwnNodeFirstAndTheLostOneLast() throws {
        let nodes = try (0..<3).map { _ in try MosquittoBroker() }
        let urls = try nodes.map { try BrokerURL(parsing: $0.url) }
        var c = MQTTClientConfiguration(broker: urls[0], clientID: "three-nodes")
        c.fallbacks = Array(urls[1...])
        c.reconnectMaxSeconds = 1
        let client = try MQTTClient(c, onMessage: { _, _ in })
        try client.start()
        #expect(eventually { client.isConnected })
        nodes[0].stop()
        #expect(eventually { client.isConnected && client.connectionCount == 2 })
        #expect(client.currentBroker == urls[1], "the next in order, not the third")
        try nodes[0].start()
        nodes[1].stop()
        #expect(eventually { client.isConnected && client.connectionCount == 3 })
        #expect(client.currentBroker == urls[0], "back to its own node")
        client.stop()
    }
}

extension MQTTClientTests {
    /// A node whose host takes no TCP connection (its SYNs dropped, as for a machine gone
    /// without a reset) is passed over after the probe's 2 s, not waited on for the kernel's
    /// connect timeout (about two minutes): the client starts on the next node.
    @Test func aNodeThatTakesNoConnectionIsPassedOver() throws {
        let port = try freePort()
        let silent = try SilentListener(port: port)
        defer { silent.close() }
        let node = try MosquittoBroker()
        var c = MQTTClientConfiguration(broker: try BrokerURL(parsing: "mqtt://127.0.0.1:\(port)"), clientID: "passes-over")
        c.fallbacks = [try BrokerURL(parsing: node.url)]
        let client = try MQTTClient(c, onMessage: { _, _ in })
        let began = Date()
        try client.start()
        #expect(eventually(timeout: 20) { client.isConnected })
        #expect(client.currentBroker == c.fallbacks[0])
        let took = Date().timeIntervalSince(began)
        #expect(took < 10, "connected after \(took) s")
        client.stop()
    }
}

extension MQTTClientTests {
    /// A node that takes the TCP connection and never answers it — a frozen broker (SIGSTOP):
    /// its kernel still completes the handshake — is passed over after
    /// ``ConnectionAnswer/initialSeconds`` (5 s), not held until the keep-alive (30 s) runs out.
    @Test func aNodeThatTakesTheConnectionButNeverAnswersIsPassedOver() throws {
        let frozen = try MosquittoBroker()
        let node = try MosquittoBroker()
        frozen.signal(SIGSTOP)
        defer { frozen.signal(SIGCONT) }
        var c = MQTTClientConfiguration(broker: try BrokerURL(parsing: frozen.url), clientID: "frozen-passed-over")
        c.fallbacks = [try BrokerURL(parsing: node.url)]
        let events = EventLog()
        let client = try MQTTClient(c, onMessage: { _, _ in }, onEvent: { events.append($0) })
        let began = Date()
        try client.start()
        #expect(eventually(timeout: 30) { client.isConnected })
        let took = Date().timeIntervalSince(began)
        #expect(client.currentBroker == c.fallbacks[0])
        #expect(took < 20, "connected after \(took) s")
        #expect(
            events.all.contains {
                if case .disconnected(let reason) = $0 { return reason.contains("did not answer it in 5 s") }
                return false
            }, "\(events.all)")
        client.stop()
    }
}

/// A thread-safe log of connection events.
final class EventLog: Sendable {
    private let items = Mutex<[MQTTConnectionEvent]>([])
    func append(_ e: MQTTConnectionEvent) { items.withLock { $0.append(e) } }
    var all: [MQTTConnectionEvent] { items.withLock { $0 } }
}

/// A thread-safe counter for callbacks.
final class ReceivedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func add() { lock.withLock { n += 1 } }
    var value: Int { lock.withLock { n } }
}

extension MQTTClientTests {
    /// Regression: libmosquitto's `mosquitto_loop_forever` reconnects by itself, and a failed
    /// reconnect sets the connection's state to "connect pending" over the "disconnecting" that
    /// a `stop()` set meanwhile: the loop then retried for good and `stop()` waited for it. Here
    /// the reconnect hangs on a port whose accept queue is full (the kernel drops the SYN),
    /// `stop()` is called, then the port closes and the reconnect fails: `stop()` must return.
    @Test func stopReturnsWhenAReconnectUnderWayFails() throws {
        let broker = try MosquittoBroker()
        var c = MQTTClientConfiguration(broker: try BrokerURL(parsing: broker.url), clientID: "stop-reconnect")
        c.reconnectMaxSeconds = 1
        let client = try MQTTClient(c, onMessage: { _, _ in })
        try client.start()
        #expect(eventually { client.isConnected })
        broker.stop(signal: SIGKILL)
        #expect(eventually { !client.isConnected })
        let silent = try SilentListener(port: broker.port)
        #expect(eventually(timeout: 15) { SilentListener.connectsUnderWay(to: broker.port) == 1 }, "the client's reconnect did not reach the port")
        let stopped = DispatchSemaphore(value: 0)
        Thread {
            client.stop()
            stopped.signal()
        }.start()
        silent.close()
        #expect(stopped.wait(timeout: .now() + 30) == .success, "stop() did not return")
    }
}

/// A TCP listener on 127.0.0.1:`port` whose accept queue is full (one connection it never
/// accepts): the kernel drops every further SYN, so a connect to it hangs until the listener
/// closes, after which a retransmitted SYN is refused.
final class SilentListener {
    private var fds: [Int32] = []

    init(port: Int) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 0) == 0 else { throw HarnessError("cannot listen on \(port): \(String(cString: strerror(errno)))") }
        fds.append(listener)
        // The one connection the queue holds (backlog 0 admits one), never accepted.
        let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(filler, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw HarnessError("cannot fill the accept queue: \(String(cString: strerror(errno)))") }
        fds.append(filler)
    }

    /// Closes the listener and its queued connection.
    func close() {
        for fd in fds { Glibc.close(fd) }
        fds = []
    }

    deinit { close() }

    /// Connections to 127.0.0.1:`port` waiting for the SYN's answer (`SYN_SENT` in `/proc/net/tcp`).
    static func connectsUnderWay(to port: Int) -> Int {
        let remote = String(format: "0100007F:%04X", port)
        // Read to the end: the kernel hands /proc/net/tcp out a page at a time, and a single read
        // (String(contentsOfFile:)) stops after the first.
        let table = FileHandle(forReadingAtPath: "/proc/net/tcp").flatMap { try? $0.readToEnd() }.map { String(decoding: $0, as: UTF8.self) } ?? ""
        return table.split(separator: "\n").dropFirst().filter { line in
            let f = line.split(separator: " ")
            return f.count > 3 && f[2] == remote && f[3] == "02"
        }.count
    }
}
