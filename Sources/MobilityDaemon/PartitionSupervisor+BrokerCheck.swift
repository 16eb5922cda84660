import Dispatch
import Foundation
import JetStreamAccess
import MQTTTransport

extension PartitionSupervisor {
    /// What the start check concluded.
    enum BrokerVerdict: Equatable {
        /// The broker has every property partitioned input relies on.
        case fit
        /// It lacks some: one sentence each (the setting, the file to fix, why).
        case unfit([String])
        /// It could not be asked (unreachable, refused the login).
        case unreadable(String)
    }

    /// Runs the start check until it concludes. While the broker cannot be reached or read (NATS
    /// started after mobilityd at boot, a node restarting) the check is made again, 1 s after the
    /// first try and twice as long after each (at most 15 s), each new reason logged once: an
    /// unreachable broker is waited for, not fatal. Nil when the broker is fit; 2 when its settings
    /// are wrong (waiting would not change them); 0 when `stopping` turns true (SIGTERM) meanwhile.
    /// `pause` waits for the given time or until the supervisor is woken.
    func awaitFitBroker(_ p: Partitioning, stopping: () -> Bool, pause: (DispatchTimeInterval) -> Void) -> Int32? {
        var delayMs = 1000
        var reported: Set<String> = []
        while !stopping() {
            let checking = clock.uptimeNanoseconds()
            switch Self.checkBroker(config, p, stopping: stopping) {
            case .fit:
                let ms = Double(clock.uptimeNanoseconds() - checking) / 1e6
                log.info(
                    "the broker's JetStream settings are fit for partitioned input", ["nats": p.natsURLs.joined(separator: ","), "took_ms": String(Int(ms))])
                return nil
            case .unfit(let problems):
                for m in problems { log.error("the broker is not configured for partitioned input; refusing to start", ["problem": m]) }
                return 2
            case .unreadable(let why):
                guard !stopping() else { break }
                if reported.insert(why).inserted {
                    log.warn("cannot check the broker's JetStream settings yet; trying again until it answers", ["error": why])
                }
                pause(.milliseconds(delayMs))
                delayMs = min(delayMs * 2, 15_000)
            }
        }
        log.info("stopped while waiting for the broker", ["exit_code": "0"])
        return 0
    }

    /// Checks, before any lease is claimed, that the broker has what ``JetStreamRequirements``
    /// asks: a probe MQTT session of this instance's own (clean, client id `{session prefix}check-{pid}`)
    /// subscribes as a partition session does, so that the broker makes a JetStream consumer with
    /// the settings it gives partition sessions now; then the MQTT streams and the consumers of
    /// the probe and of every partition session are read over the NATS protocol (`--nats`).
    /// Gives up (unreadable) as soon as `stopping` turns true.
    static func checkBroker(_ config: DaemonConfiguration, _ p: Partitioning, stopping: () -> Bool) -> BrokerVerdict {
        let root = config.topicRoot
        let probePrefix = p.prefix.replacingOccurrences(of: "{k}", with: "check")
        let probeTopic = "\(probePrefix)\(root)/users/+/+"
        guard var c = probeConfiguration(config, clientID: "\(p.sessionPrefix)check-\(getpid())") else { return .unreadable("bad --broker \(config.broker)") }
        c.subscriptions = [probeTopic]
        let probe: MQTTClient
        do {
            probe = try MQTTClient(c, onMessage: { _, _ in })
            try probe.start()
        } catch { return .unreadable("cannot connect the check's MQTT session to \(config.broker): \(error)") }
        defer { probe.stop() }
        let deadline = Date().addingTimeInterval(10)
        while !probe.isSubscribed {
            guard !stopping() else { return .unreadable("stopped") }
            guard Date() < deadline else { return .unreadable("the broker at \(config.broker) did not answer the check's MQTT subscription within 10 s") }
            usleep(20_000)
        }
        let inspector = JetStreamInspector(
            urls: p.natsURLs, username: config.username, password: config.password, caFile: config.caFile, certFile: config.certFile,
            keyFile: config.keyFile)
        var sessions: [Int: JetStreamInspector.Session] = [:]
        for k in 0..<p.count {
            sessions[k] = .init(
                clientID: "\(p.sessionPrefix)\(k)", filter: JetStreamInspector.subject(p.subscriptions(of: k, root: root)[0]),
                consumerPrefix: p.consumerPrefix(of: k))
        }
        do {
            let facts = try inspector.facts(probe: .init(clientID: c.clientID, filter: JetStreamInspector.subject(probeTopic)), partitions: sessions)
            var problems = JetStreamRequirements.problems(facts, intake: p.intake)
            if p.intake == .mqttSessions, facts.probe == nil, probeTopic.contains(".") {
                problems.append(
                    "the check subscribed to \(probeTopic): NATS before 2.10.8 refuses MQTT topics with a '.', so --topic-root and --partition-prefix need one without it there (or nats-server 2.10.8 or later)"
                )
            }
            return problems.isEmpty ? .fit : .unfit(problems)
        } catch { return .unreadable(error.description) }
    }

    /// A clean MQTT session of this instance's own on the broker, with its credentials and TLS
    /// (the start check's probe, and the probe of a broker that was out of reach).
    static func probeConfiguration(_ config: DaemonConfiguration, clientID: String) -> MQTTClientConfiguration? {
        guard let broker = config.brokers.first else { return nil }
        var c = MQTTClientConfiguration(broker: broker, clientID: clientID)
        c.fallbacks = Array(config.brokers.dropFirst())
        c.protocolVersion = config.mqttVersion
        c.username = config.username
        c.password = config.password
        c.caFile = config.caFile
        c.certFile = config.certFile
        c.keyFile = config.keyFile
        c.cleanSession = true
        return c
    }
}
