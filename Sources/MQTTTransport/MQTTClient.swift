import CMosquitto
import Dispatch
import Glibc
import Synchronization

/// How an MQTT client connects.
package struct MQTTClientConfiguration: Sendable {
    /// MQTT protocol versions.
    package enum ProtocolVersion: String, Sendable {
        case v311 = "3.1.1", v5 = "5"

        /// The version an `--mqtt-version` value names (`3.1.1`, also written `3` or `311`, or
        /// `5`), as the daemon and every tool read it; nil for anything else.
        package init?(option: String) { self.init(rawValue: option == "3" || option == "311" ? "3.1.1" : option) }
    }

    /// The broker to connect to first (`mqtt://` or `mqtts://`).
    package var broker: BrokerURL
    /// The other nodes of `broker`'s cluster, which must share their clients' sessions (as NATS's
    /// MQTT listener does; not independent mosquitto brokers, whose sessions and queues are their
    /// own). When the connection in use is lost, or the first cannot be made, the client tries
    /// the next node in turn (`broker` first, the lost one last), and the whole round again after
    /// the backoff. Same scheme as `broker`.
    package var fallbacks: [BrokerURL] = []
    /// A fixed client id, so the broker keeps the session across reconnects and restarts.
    package var clientID: String
    /// Clean session (3.1.1) / clean start (5). Off for a persistent session.
    package var cleanSession = false
    /// The MQTT protocol spoken (default 3.1.1).
    package var protocolVersion = ProtocolVersion.v311
    /// The keep-alive interval (seconds) the broker uses to detect a vanished client.
    package var keepAliveSeconds: Int32 = 30
    /// MQTT 5 session expiry (seconds). Without it a v5 broker keeps no session.
    package var sessionExpirySeconds: Int32 = 7 * 86_400
    /// The user name sent on connect (nil: none).
    package var username: String?
    /// The password sent with `username` (nil: none).
    package var password: String?
    /// CA file for `mqtts://` (system store when nil).
    package var caFile: String?
    /// A client certificate (PEM) for TLS client authentication; needs `keyFile`.
    package var certFile: String?
    /// The private key (PEM) of `certFile`.
    package var keyFile: String?
    /// The last will: published by the broker if this client vanishes.
    package var will: (topic: String, payload: [UInt8], retain: Bool)?
    /// Filters subscribed at QoS 1 on every connect.
    package var subscriptions: [String] = []
    /// MQTT 5: subscribe with *retain as published*, so that a message its publisher retained
    /// keeps its retain flag when forwarded live, not only when a (re)subscription delivers it
    /// again. Under 3.1.1 only the re-deliveries carry the flag.
    package var retainAsPublished = false
    /// Reconnect backoff: first delay and cap, seconds, doubling in between.
    package var reconnectMinSeconds: UInt32 = 1
    /// The longest reconnect delay (seconds).
    package var reconnectMaxSeconds: UInt32 = 30
    /// Outgoing QoS 1 messages in flight at once.
    package var maxInflight: Int32 = 1000
    /// Incoming payloads larger than this are not copied: `onOversized` gets their topic and size
    /// instead of `onMessage` (nil: every payload is delivered).
    package var maxIncomingPayloadBytes: Int?

    package init(broker: BrokerURL, clientID: String) {
        self.broker = broker
        self.clientID = clientID
    }
}

/// A connection state change, for logs and metrics.
package enum MQTTConnectionEvent: Sendable, Equatable {
    /// The broker accepted the connection. `sessionPresent`: it resumed a session it kept for
    /// this client id (CONNACK's flag; always false with a clean session). `sessionLost`: a
    /// client with a persistent session (clean session off) reconnected and the broker had none,
    /// so what it queued while the client was away is gone.
    /// `broker`: the node that took it (``MQTTClientConfiguration/fallbacks``).
    case connected(sessionPresent: Bool, sessionLost: Bool, broker: BrokerURL)
    case disconnected(reason: String)
    /// The broker answered (SUBACK) the subscriptions made on this connection.
    case subscribed
    /// The broker refused the credentials or authorisation: retrying cannot help.
    case refused(MQTTError)
}

/// A small Swift client over libmosquitto's threaded loop.
///
/// The network thread calls `onMessage` with a copied topic and payload; the handler may block to
/// apply back-pressure (the broker keeps what we do not read). Subscriptions are made in the
/// connect callback, so every reconnect subscribes again.
///
/// Sendability: `handle` is only ever passed to libmosquitto, which is thread-safe once the
/// threaded loop runs; all Swift-side mutable state lives in a `Mutex` or `Atomic`.
package final class MQTTClient: @unchecked Sendable {
    nonisolated(unsafe) private let handle: OpaquePointer
    private let configuration: MQTTClientConfiguration
    private let onMessage: @Sendable (MQTTClient, String, [UInt8]) -> Void
    private let onEvent: @Sendable (MQTTClient, MQTTConnectionEvent) -> Void
    private let onPublished: @Sendable (MQTTClient, _ mid: Int32, _ reasonCode: Int32) -> Void
    private let onOversized: @Sendable (MQTTClient, _ topic: String, _ size: Int) -> Void
    private let onRetained: (@Sendable (MQTTClient, _ topic: String, _ payloadBytes: Int) -> Bool)?
    private let connectedFlag = Atomic<Bool>(false)
    private let connections = Atomic<Int>(0)
    private let started = Atomic<Bool>(false)
    /// The network thread runs (from the first successful connect until ``stop()``); it signals
    /// `networkDone` as it ends.
    private let loopRunning = Atomic<Bool>(false)
    private let networkDone = DispatchSemaphore(value: 0)
    private let networkThread = Atomic<UInt>(0)
    /// The first connection is being retried on our thread, which signals `retryDone` as it ends.
    private let retrying = Atomic<Bool>(false)
    private let retryDone = DispatchSemaphore(value: 0)
    private let retryThread = Atomic<UInt>(0)
    private let published = Atomic<Int>(0)
    private let acknowledged = Atomic<Int>(0)
    private let refusedByBroker = Atomic<Int>(0)
    /// The message id of the SUBSCRIBE sent in the connect callback of the current connection (0: none yet).
    private let subscribeMid = Atomic<Int32>(0)
    private let subscribedFlag = Atomic<Bool>(false)
    /// `broker` and the fallbacks, in the order tried.
    private let brokers: [BrokerURL]
    /// The index in `brokers` of the node connected to, or last tried.
    private let current = Atomic<Int>(0)

    private static let libraryInit: Void = {
        mosquitto_lib_init(); return ()
    }()

    /// Whether the client is connected now.
    package var isConnected: Bool { connectedFlag.load(ordering: .relaxed) }
    /// Whether the broker has answered (SUBACK) the subscriptions made on the current connection,
    /// whatever it granted: from then on, messages published on the filters reach this client.
    /// False while disconnected, and until a reconnect's subscriptions are answered.
    package var isSubscribed: Bool { subscribedFlag.load(ordering: .acquiring) }
    /// Messages handed to libmosquitto by ``publish(topic:payload:qos:retain:)``.
    package var publishedCount: Int { published.load(ordering: .relaxed) }
    /// Messages the broker acknowledged (QoS 1) or that were written (QoS 0).
    package var acknowledgedCount: Int { acknowledged.load(ordering: .sequentiallyConsistent) }

    /// Messages the broker answered with an MQTT 5 reason code of 0x80 or more.
    package var refusedCount: Int { refusedByBroker.load(ordering: .sequentiallyConsistent) }

    /// The broker connected to, or last tried (``MQTTClientConfiguration/fallbacks``).
    package var currentBroker: BrokerURL { brokers[current.load(ordering: .relaxed)] }

    /// Successful connections so far (reconnects are this minus one).
    package var connectionCount: Int { connections.load(ordering: .relaxed) }

    /// Creates a client; nothing happens on the network until ``start()``.
    /// - Parameters:
    ///   - onPublished: called on the network thread with the message id of each publish the
    ///     broker answered (QoS 1) or that was written (QoS 0), and the broker's MQTT 5 reason code:
    ///     0 for success, 0x80 or more when the broker refused the message (e.g. 135, not
    ///     authorised, for a publish its ACL denies). Under MQTT 3.1.1 it is always 0: a 3.1.1
    ///     PUBACK cannot say no, and mosquitto acknowledges a denied publish like any other.
    ///   - onOversized: called instead of `onMessage` for a payload over
    ///     ``MQTTClientConfiguration/maxIncomingPayloadBytes``, which is not copied.
    ///   - onRetained: called first for a message delivered with the retain flag, with its topic
    ///     and payload size; true when it took the message (then it is not copied, and neither
    ///     `onMessage` nor `onOversized` is called).
    package convenience init(
        _ configuration: MQTTClientConfiguration, onMessage: @escaping @Sendable (String, [UInt8]) -> Void,
        onEvent: @escaping @Sendable (MQTTConnectionEvent) -> Void = { _ in },
        onPublished: @escaping @Sendable (_ mid: Int32, _ reasonCode: Int32) -> Void = { _, _ in },
        onOversized: @escaping @Sendable (_ topic: String, _ size: Int) -> Void = { _, _ in },
        onRetained: (@Sendable (_ topic: String, _ payloadBytes: Int) -> Bool)? = nil
    ) throws(MQTTError) {
        try self.init(
            configuration, onMessage: { _, topic, payload in onMessage(topic, payload) }, onEvent: { _, e in onEvent(e) },
            onPublished: { _, mid, reasonCode in onPublished(mid, reasonCode) }, onOversized: { _, topic, size in onOversized(topic, size) },
            onRetained: onRetained.map { taken in { @Sendable _, topic, size in taken(topic, size) } })
    }

    /// Creates a client whose callbacks are handed the client they belong to, to act on it from
    /// the network thread (publish when connected, drop the connection from `onMessage`): the same
    /// callbacks as ``init(_:onMessage:onEvent:onPublished:onOversized:onRetained:)``.
    package init(
        _ configuration: MQTTClientConfiguration, onMessage: @escaping @Sendable (MQTTClient, String, [UInt8]) -> Void,
        onEvent: @escaping @Sendable (MQTTClient, MQTTConnectionEvent) -> Void = { _, _ in },
        onPublished: @escaping @Sendable (MQTTClient, _ mid: Int32, _ reasonCode: Int32) -> Void = { _, _, _ in },
        onOversized: @escaping @Sendable (MQTTClient, _ topic: String, _ size: Int) -> Void = { _, _, _ in },
        onRetained: (@Sendable (MQTTClient, _ topic: String, _ payloadBytes: Int) -> Bool)? = nil
    ) throws(MQTTError) {
        _ = MQTTClient.libraryInit
        self.configuration = configuration
        self.brokers = [configuration.broker] + configuration.fallbacks
        self.onMessage = onMessage
        self.onEvent = onEvent
        self.onPublished = onPublished
        self.onOversized = onOversized
        self.onRetained = onRetained
        guard let h = mosquitto_new(configuration.clientID, configuration.cleanSession, nil) else {
            throw .configuration("cannot create an MQTT client (client id '\(configuration.clientID)')")
        }
        self.handle = h
        mosquitto_user_data_set(h, Unmanaged.passUnretained(self).toOpaque())
        try configure()
    }

    deinit {
        stop()
        mosquitto_destroy(handle)
    }

    private func check(_ rc: Int32, _ what: String) throws(MQTTError) {
        if rc != MOSQ_ERR_SUCCESS.rawValue { throw MQTTError.library(rc, what) }
    }

    private func configure() throws(MQTTError) {
        let c = configuration
        let v5 = c.protocolVersion == .v5
        try check(mosquitto_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311), "protocol version")
        try check(mosquitto_int_option(handle, MOSQ_OPT_TCP_NODELAY, 1), "TCP_NODELAY")
        if v5 {
            try check(mosquitto_int_option(handle, MOSQ_OPT_SEND_MAXIMUM, c.maxInflight), "send maximum")
        } else {
            try check(mosquitto_max_inflight_messages_set(handle, UInt32(c.maxInflight)), "max inflight")
        }
        if let u = c.username { try check(mosquitto_username_pw_set(handle, u, c.password), "credentials") }
        if c.broker.tls {
            try check(mosquitto_tls_set(handle, c.caFile, c.caFile == nil ? "/etc/ssl/certs" : nil, c.certFile, c.keyFile, nil), "TLS")
        }
        if let w = c.will {
            let rc = w.payload.withUnsafeBytes { mosquitto_will_set(handle, w.topic, Int32(w.payload.count), $0.baseAddress, 1, w.retain) }
            try check(rc, "last will")
        }
        try check(mosquitto_reconnect_delay_set(handle, c.reconnectMinSeconds, c.reconnectMaxSeconds, true), "reconnect delay")

        mosquitto_connect_with_flags_callback_set(handle) { _, obj, rc, flags in
            guard let obj else { return }
            Unmanaged<MQTTClient>.fromOpaque(obj).takeUnretainedValue().connected(rc: rc, sessionPresent: flags & 1 != 0)
        }
        mosquitto_disconnect_callback_set(handle) { _, obj, rc in
            guard let obj else { return }
            let me = Unmanaged<MQTTClient>.fromOpaque(obj).takeUnretainedValue()
            me.connectedFlag.store(false, ordering: .relaxed)
            me.subscribedFlag.store(false, ordering: .releasing)
            me.onEvent(me, .disconnected(reason: rc == 0 ? "requested" : String(cString: mosquitto_strerror(rc))))
        }
        mosquitto_publish_v5_callback_set(handle) { _, obj, mid, reasonCode, _ in
            guard let obj else { return }
            let me = Unmanaged<MQTTClient>.fromOpaque(obj).takeUnretainedValue()
            // The answer is handed on before it is counted: a caller that waits for the counts
            // (BrokerAccess.publishConfirmed) then finds a refusal already recorded.
            me.onPublished(me, mid, reasonCode)
            if reasonCode < 0x80 {
                me.acknowledged.add(1, ordering: .sequentiallyConsistent)
            } else {
                me.refusedByBroker.add(1, ordering: .sequentiallyConsistent)
            }
        }
        mosquitto_subscribe_callback_set(handle) { _, obj, mid, _, _ in
            guard let obj else { return }
            let me = Unmanaged<MQTTClient>.fromOpaque(obj).takeUnretainedValue()
            if mid == me.subscribeMid.load(ordering: .acquiring) {
                me.subscribedFlag.store(true, ordering: .releasing)
                me.onEvent(me, .subscribed)
            }
        }
        mosquitto_message_callback_set(handle) { _, obj, msg in
            guard let obj, let msg else { return }
            let me = Unmanaged<MQTTClient>.fromOpaque(obj).takeUnretainedValue()
            let m = msg.pointee
            let topic = String(cString: m.topic)
            if m.retain, let onRetained = me.onRetained, onRetained(me, topic, Int(m.payloadlen)) { return }
            if let limit = me.configuration.maxIncomingPayloadBytes, Int(m.payloadlen) > limit {
                me.onOversized(me, topic, Int(m.payloadlen))
                return
            }
            let payload: [UInt8] =
                m.payloadlen > 0 && m.payload != nil
                ? Array(UnsafeRawBufferPointer(start: m.payload, count: Int(m.payloadlen))) : []
            me.onMessage(me, topic, payload)
        }
    }

    private func connected(rc: Int32, sessionPresent: Bool) {
        let v5 = configuration.protocolVersion == .v5
        guard rc == 0 else {
            let e = MQTTError.refused(rc, v5: v5)
            if MQTTClient.refusalIsFinal(rc, v5: v5) { onEvent(self, .refused(e)) } else { onEvent(self, .disconnected(reason: e.message)) }
            return
        }
        connectedFlag.store(true, ordering: .relaxed)
        let earlier = connections.wrappingAdd(1, ordering: .relaxed).oldValue
        let subs = configuration.subscriptions
        subscribedFlag.store(subs.isEmpty, ordering: .releasing)
        if !subs.isEmpty {
            var cStrings = subs.map { strdup($0) }
            defer { cStrings.forEach { free($0) } }
            var mid: Int32 = 0
            let options = v5 && configuration.retainAsPublished ? Int32(MQTT_SUB_OPT_RETAIN_AS_PUBLISHED.rawValue) : 0
            // The SUBACK is handled on this (the network) thread after this callback returns, so
            // the id is stored before the subscribe callback can compare it.
            let rc = cStrings.withUnsafeMutableBufferPointer { buf in
                buf.baseAddress!.withMemoryRebound(to: UnsafeMutablePointer<CChar>?.self, capacity: buf.count) {
                    mosquitto_subscribe_multiple(handle, &mid, Int32(subs.count), $0, 1, options, nil)
                }
            }
            subscribeMid.store(mid, ordering: .releasing)
            if rc != 0 { onEvent(self, .disconnected(reason: "subscribe failed: \(String(cString: mosquitto_strerror(rc)))")) }
        }
        onEvent(
            self,
            .connected(sessionPresent: sessionPresent, sessionLost: !configuration.cleanSession && earlier > 0 && !sessionPresent, broker: currentBroker))
    }

    /// Connects (retrying in the background if the broker is not there yet) and starts the network thread.
    ///
    /// Once a first connection has succeeded, libmosquitto's network thread reconnects by itself.
    /// Before that it cannot be relied on: a first connect that fails after the TCP connection is
    /// made (reset while CONNECT is sent, `MOSQ_ERR_CONN_LOST`) leaves the client in a state in
    /// which the thread gives up for good (seen when a killed daemon restarted). So the first
    /// connection is retried here, with the same backoff, on a thread of our own that starts the
    /// network thread once connected.
    package func start() throws(MQTTError) {
        guard !started.exchange(true, ordering: .sequentiallyConsistent) else { return }
        let rc = connectRound(last: nil, first: true)
        if rc == MOSQ_ERR_SUCCESS.rawValue {
            startNetworkThread()
            return
        }
        guard MQTTClient.connectFailureIsRetryable(rc) else {
            started.store(false, ordering: .sequentiallyConsistent)
            throw MQTTError.library(rc, "connect to \(currentBroker)")
        }
        let why = MQTTClient.describe(rc)
        onEvent(self, .disconnected(reason: "\(brokersNamed) not reachable yet (\(why)); retrying"))
        retrying.store(true, ordering: .sequentiallyConsistent)
        let spawned = MQTTClient.spawn("mqtt-connect") { [self] in
            retryThread.store(UInt(pthread_self()), ordering: .sequentiallyConsistent)
            retryFirstConnect()
        }
        if !spawned {
            retrying.store(false, ordering: .sequentiallyConsistent)
            onEvent(self, .disconnected(reason: "cannot start a thread to retry connecting to \(brokersNamed)"))
        }
    }

    /// How the brokers are named in a log line: the one, or all in the order tried.
    private var brokersNamed: String {
        brokers.count == 1 ? "broker \(brokers[0])" : "brokers \(brokers.map(\.description).joined(separator: ","))"
    }

    /// One connect attempt to each broker in turn, in the order given (the instance's own node
    /// first) but `last` (the one just lost) last, until one takes it (it becomes the current
    /// one) or an error says the client's own settings are wrong; the last attempt's code.
    /// `first`: no attempt made before (which sets the options).
    private func connectRound(last: Int?, first: Bool) -> Int32 {
        var rc = MOSQ_ERR_NO_CONN.rawValue
        var probeError: Int32 = 0
        // The last attempt's errno, when it was the probe's: what the caller's log line says.
        defer { if rc == MOSQ_ERR_ERRNO.rawValue, probeError != 0 { errno = probeError } }
        let order = brokers.indices.filter { $0 != last } + (last.map { [$0] } ?? [])
        for (k, i) in order.enumerated() {
            guard k == 0 || started.load(ordering: .sequentiallyConsistent) else { break }
            current.store(i, ordering: .relaxed)
            // libmosquitto's connect waits for the kernel's TCP connect timeout (about two
            // minutes) on a host that is gone without a reset: with others to try, a node whose
            // host does not take a TCP connection within the probe's time is passed over.
            if brokers.count > 1 {
                let refused = MQTTClient.probe(brokers[i], timeoutMs: MQTTClient.probeTimeoutMs)
                guard refused == 0 else {
                    (rc, probeError) = (MOSQ_ERR_ERRNO.rawValue, refused)
                    continue
                }
            }
            probeError = 0
            rc = connectOnce(to: brokers[i], first: first || brokers.count > 1)
            if rc == MOSQ_ERR_SUCCESS.rawValue || !MQTTClient.connectFailureIsRetryable(rc) { break }
        }
        return rc
    }

    /// How long a node of several is given to take a TCP connection before its turn is passed.
    static let probeTimeoutMs: Int32 = 2000

    /// Whether `broker`'s host takes a TCP connection on its port within `timeoutMs` (the
    /// connection is closed at once): 0, or why not (an errno; `ETIMEDOUT` when an address did
    /// not answer in time; 0 for a name that does not resolve, which the connect then reports).
    /// Its addresses are tried in order, as libmosquitto's connect tries them: one that refuses
    /// at once passes the turn to the next, one that does not answer ends the probe
    /// (libmosquitto's connect would wait on it).
    static func probe(_ broker: BrokerURL, timeoutMs: Int32) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        // A name that does not resolve is left to libmosquitto's connect, which names the failure.
        guard getaddrinfo(broker.host, String(broker.port), &hints, &found) == 0 else { return 0 }
        defer { freeaddrinfo(found) }
        var next = found
        var failure = ECONNREFUSED
        while let a = next {
            next = a.pointee.ai_next
            let fd = socket(a.pointee.ai_family, a.pointee.ai_socktype | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), a.pointee.ai_protocol)
            guard fd >= 0 else {
                failure = errno
                continue
            }
            defer { close(fd) }
            if connect(fd, a.pointee.ai_addr, a.pointee.ai_addrlen) == 0 { return 0 }
            guard errno == EINPROGRESS else {
                failure = errno
                continue
            }
            var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(timeoutMs) * 1_000_000
            var ready: Int32
            repeat {
                let left = deadline - min(deadline, DispatchTime.now().uptimeNanoseconds)
                ready = poll(&p, 1, Int32(left / 1_000_000))
            } while ready < 0 && errno == EINTR
            guard ready == 1 else { return ready == 0 ? ETIMEDOUT : errno }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else { return errno }
            if error == 0 { return 0 }
            failure = error
        }
        return failure
    }

    /// One connect attempt: `first` sets the broker and options (every attempt does when there
    /// are fallbacks, whose host differs), otherwise the last ones are reused.
    private func connectOnce(to broker: BrokerURL, first: Bool) -> Int32 {
        let c = configuration
        guard first else { return mosquitto_reconnect(handle) }
        if c.protocolVersion == .v5 {
            var props: OpaquePointer? = nil
            let rc = mosquitto_property_add_int32(&props, Int32(MQTT_PROP_SESSION_EXPIRY_INTERVAL.rawValue), UInt32(bitPattern: c.sessionExpirySeconds))
            guard rc == MOSQ_ERR_SUCCESS.rawValue else { return rc }
            defer { mosquitto_property_free_all(&props) }
            return mosquitto_connect_bind_v5(handle, broker.host, broker.port, c.keepAliveSeconds, nil, props)
        }
        return mosquitto_connect(handle, broker.host, broker.port, c.keepAliveSeconds)
    }

    /// Retries the first connection with backoff until it succeeds (then starts the network
    /// thread) or ``stop()`` is called.
    private func retryFirstConnect() {
        let c = configuration
        var delay = max(c.reconnectMinSeconds, 1)
        var lastReason = ""
        defer { retryDone.signal() }
        while true {
            // Sleep in 50 ms steps so that stop() is not held up by a long backoff.
            for _ in 0..<(Int(delay) * 20) {
                guard started.load(ordering: .sequentiallyConsistent) else { return }
                usleep(50_000)
            }
            guard started.load(ordering: .sequentiallyConsistent) else { return }
            let rc = connectRound(last: nil, first: false)
            if rc == MOSQ_ERR_SUCCESS.rawValue {
                startNetworkThread()
                retrying.store(false, ordering: .sequentiallyConsistent)
                return
            }
            let reason = MQTTClient.describe(rc)
            if reason != lastReason { onEvent(self, .disconnected(reason: "\(brokersNamed) not reachable (\(reason)); retrying")) }
            lastReason = reason
            delay = min(delay * 2, max(c.reconnectMaxSeconds, 1))
        }
    }

    /// Starts the network thread (its own, named `mqtt-net`, for the client's life), which runs
    /// ``runNetworkLoop()``.
    private func startNetworkThread() {
        mosquitto_threaded_set(handle, true)
        loopRunning.store(true, ordering: .sequentiallyConsistent)
        let spawned = MQTTClient.spawn("mqtt-net") { [self] in
            networkThread.store(UInt(pthread_self()), ordering: .sequentiallyConsistent)
            defer { networkDone.signal() }
            runNetworkLoop()
        }
        if !spawned {
            loopRunning.store(false, ordering: .sequentiallyConsistent)
            onEvent(self, .disconnected(reason: "cannot start the MQTT network thread"))
        }
    }

    /// libmosquitto's loop, one turn at a time, until ``stop()``: a lost connection (reported by
    /// the disconnect callback) is reconnected here with the configured backoff. Not
    /// `mosquitto_loop_forever`, for two reasons: it returns for good on some errors,
    /// `MOSQ_ERR_TLS` among them (with OpenSSL 3 a broker killed under a TLS connection is one:
    /// "unexpected eof while reading"); and its own reconnect sets the connection's state back to
    /// connecting over the disconnecting that a concurrent `mosquitto_disconnect` set, after which
    /// it never returned — a ``stop()`` while the broker restarted waited for it for good.
    /// Stopping: the turns go on until the DISCONNECT ``stop()`` queued is sent (the connection
    /// then closes) or for at most 2 s. With several nodes, a node that took the connection and
    /// has not answered it (the TLS handshake, CONNACK) within its ``ConnectionAnswer`` patience
    /// is passed over: a frozen node's kernel still completes TCP handshakes, and libmosquitto
    /// would wait for the keep-alive.
    private func runNetworkLoop() {
        var stopDeadline: DispatchTime?
        var answer = ConnectionAnswer(keepAliveSeconds: configuration.keepAliveSeconds)
        if brokers.count > 1 { answer.attempted(now: DispatchTime.now().uptimeNanoseconds, connections: connectionCount) }
        while true {
            let rc = mosquitto_loop(handle, 1000, 1)
            if !started.load(ordering: .sequentiallyConsistent) {
                if rc != MOSQ_ERR_SUCCESS.rawValue { return }
                // Asked again from this thread: a reconnect under way when stop() asked made
                // the connection over its request, which it then never sent.
                if stopDeadline == nil { mosquitto_disconnect(handle) }
                let deadline = stopDeadline ?? .now() + .seconds(2)
                stopDeadline = deadline
                if DispatchTime.now() >= deadline { return }
                continue
            }
            if rc != MOSQ_ERR_SUCCESS.rawValue {
                guard reconnectWithBackoff() else { return }
                if brokers.count > 1 { answer.attempted(now: DispatchTime.now().uptimeNanoseconds, connections: connectionCount) }
                continue
            }
            if started.load(ordering: .sequentiallyConsistent),
                let waited = answer.overdue(connections: connectionCount, now: DispatchTime.now().uptimeNanoseconds)
            {
                onEvent(self, .disconnected(reason: "\(currentBroker) took the connection but did not answer it in \(waited) s; trying the next node"))
                abortConnection()  // the next turn fails, and the reconnect tries this node last
            }
        }
    }

    /// Reconnects with the configured backoff until it succeeds (true) or ``stop()`` is called
    /// (false). Each round tries every broker once, the lost one last: a client that lost a
    /// fallback goes back to its own node when that answers.
    private func reconnectWithBackoff() -> Bool {
        let c = configuration
        var delay = max(c.reconnectMinSeconds, 1)
        while true {
            for _ in 0..<(Int(delay) * 20) {
                guard started.load(ordering: .sequentiallyConsistent) else { return false }
                usleep(50_000)
            }
            guard started.load(ordering: .sequentiallyConsistent) else { return false }
            let lost = current.load(ordering: .relaxed)
            if connectRound(last: lost, first: false) == MOSQ_ERR_SUCCESS.rawValue { return true }
            delay = min(delay * 2, max(c.reconnectMaxSeconds, 1))
        }
    }

    /// A libmosquitto result as text (`errno`'s for `MOSQ_ERR_ERRNO`).
    private static func describe(_ rc: Int32) -> String {
        rc == MOSQ_ERR_ERRNO.rawValue ? String(cString: strerror(errno)) : String(cString: mosquitto_strerror(rc))
    }

    /// Whether a refused connection (a 3.1.1 CONNACK return code or an MQTT 5 reason code) will
    /// be refused again however often it is retried: bad credentials or no authorisation (4, 5;
    /// 134, 135), or a protocol version the broker does not speak (1; 132 — NATS 2.9 refuses
    /// MQTT 5 so). Retrying those once left a client connected to nothing for good, while its
    /// network thread gave up after two attempts.
    package static func refusalIsFinal(_ rc: Int32, v5: Bool) -> Bool {
        v5 ? [132, 134, 135].contains(rc) : [1, 4, 5].contains(rc)
    }

    /// Whether a failed first connect (a libmosquitto error code) is worth retrying. Everything is
    /// (a refused, reset or timed-out connection, a failed lookup or TLS handshake: the broker or
    /// the network may come back) except the errors that say the client's own settings are wrong.
    /// A reset during the first connect (`MOSQ_ERR_CONN_LOST`) once stopped a restarted daemon.
    package static func connectFailureIsRetryable(_ rc: Int32) -> Bool {
        let fatal: [mosq_err_t] = [MOSQ_ERR_NOMEM, MOSQ_ERR_INVAL, MOSQ_ERR_NOT_SUPPORTED, MOSQ_ERR_MALFORMED_UTF8, MOSQ_ERR_DUPLICATE_PROPERTY]
        return !fatal.contains { $0.rawValue == rc }
    }

    /// Whether a failed ``publish(topic:payload:qos:retain:)`` (its libmosquitto code) would fail
    /// again however often it is retried: the message itself is unacceptable (too large for the
    /// broker's maximum packet size, an invalid topic or UTF-8, a QoS or retain the broker does
    /// not support). Anything else (not connected, out of memory, a lost connection) may pass later.
    package static func publishFailureIsPermanent(_ rc: Int32) -> Bool {
        let permanent: [mosq_err_t] = [
            MOSQ_ERR_INVAL, MOSQ_ERR_PAYLOAD_SIZE, MOSQ_ERR_MALFORMED_UTF8, MOSQ_ERR_OVERSIZE_PACKET,
            MOSQ_ERR_QOS_NOT_SUPPORTED, MOSQ_ERR_RETAIN_NOT_SUPPORTED, MOSQ_ERR_TOPIC_ALIAS_INVALID,
            MOSQ_ERR_NOT_SUPPORTED
        ]
        return permanent.contains { $0.rawValue == rc }
    }

    /// The label of a libmosquitto publish error, as metrics and dead letters name it
    /// (`oversize_packet`, `malformed_utf8`, …; `library_error_N` for others).
    package static func publishFailureLabel(_ rc: Int32) -> String {
        switch rc {
        case MOSQ_ERR_INVAL.rawValue: "invalid"
        case MOSQ_ERR_PAYLOAD_SIZE.rawValue: "payload_size"
        case MOSQ_ERR_MALFORMED_UTF8.rawValue: "malformed_utf8"
        case MOSQ_ERR_OVERSIZE_PACKET.rawValue: "oversize_packet"
        case MOSQ_ERR_QOS_NOT_SUPPORTED.rawValue: "qos_not_supported"
        case MOSQ_ERR_RETAIN_NOT_SUPPORTED.rawValue: "retain_not_supported"
        default: "library_error_\(rc)"
        }
    }

    /// Publishes a message (QoS 0 or 1) and returns its message id. Thread-safe; does not wait for
    /// the acknowledgement (see `onPublished`).
    @discardableResult
    package func publish(topic: String, payload: [UInt8], qos: Int32 = 1, retain: Bool = false) throws(MQTTError) -> Int32 {
        var mid: Int32 = 0
        let rc = payload.withUnsafeBytes { mosquitto_publish(handle, &mid, topic, Int32(payload.count), $0.baseAddress, qos, retain) }
        try check(rc, "publish to \(topic)")
        published.add(1, ordering: .relaxed)
        return mid
    }

    /// Publishes a UTF-8 string.
    package func publish(topic: String, _ text: String, qos: Int32 = 1, retain: Bool = false) throws(MQTTError) {
        try publish(topic: topic, payload: Array(text.utf8), qos: qos, retain: retain)
    }

    /// Drops the connection at once, sending nothing more: called inside `onMessage`, the
    /// acknowledgement (PUBACK) of that message, which libmosquitto writes after the callback
    /// returns, is never sent, so the broker delivers it again to the session's next connection.
    package func abortConnection() {
        let fd = mosquitto_socket(handle)
        if fd >= 0 { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
    }

    /// Disconnects cleanly (the will is not sent) and stops the network thread.
    package func stop() {
        guard started.exchange(false, ordering: .sequentiallyConsistent) else { return }
        // The retry thread sees `started` within 50 ms; not waited for from its own callback.
        if retrying.load(ordering: .sequentiallyConsistent), UInt(pthread_self()) != retryThread.load(ordering: .sequentiallyConsistent) {
            retryDone.wait()
        }
        if loopRunning.exchange(false, ordering: .sequentiallyConsistent) {
            mosquitto_disconnect(handle)
            // Not from a callback on the network thread itself: its loop ends once this returns.
            if UInt(pthread_self()) != networkThread.load(ordering: .sequentiallyConsistent) { networkDone.wait() }
        }
        connectedFlag.store(false, ordering: .relaxed)
        subscribedFlag.store(false, ordering: .releasing)
    }
}
