import Foundation
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

    /// Checks, before any lease is claimed, that the broker has what ``JetStreamRequirements``
    /// asks: a probe MQTT session of this instance's own (clean, client id `{session prefix}check-{pid}`)
    /// subscribes as a partition session does, so that the broker makes a JetStream consumer with
    /// the settings it gives partition sessions now; then the MQTT streams and the consumers of
    /// the probe and of every partition session are read over the NATS protocol (`--nats`).
    static func checkBroker(_ config: DaemonConfiguration, _ p: Partitioning) -> BrokerVerdict {
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
            guard Date() < deadline else { return .unreadable("the broker at \(config.broker) did not answer the check's MQTT subscription within 10 s") }
            usleep(20_000)
        }
        let inspector = JetStreamInspector(
            urls: p.natsURLs, username: config.username, password: config.password, caFile: config.caFile, certFile: config.certFile,
            keyFile: config.keyFile)
        var filters: [Int: String] = [:]
        for k in 0..<p.count { filters[k] = subject(p.subscriptions(of: k, root: root)[0]) }
        do {
            let facts = try inspector.facts(probeFilter: subject(probeTopic), partitionFilters: filters)
            let problems = JetStreamRequirements.problems(facts)
            return problems.isEmpty ? .fit : .unfit(problems)
        } catch { return .unreadable(error.description) }
    }

    /// A clean MQTT session of this instance's own on the broker, with its credentials and TLS
    /// (the start check's probe, and the probe of a broker that was out of reach).
    static func probeConfiguration(_ config: DaemonConfiguration, clientID: String) -> MQTTClientConfiguration? {
        guard let broker = try? BrokerURL(parsing: config.broker) else { return nil }
        var c = MQTTClientConfiguration(broker: broker, clientID: clientID)
        c.protocolVersion = config.mqttVersion
        c.username = config.username
        c.password = config.password
        c.caFile = config.caFile
        c.certFile = config.certFile
        c.keyFile = config.keyFile
        c.cleanSession = true
        return c
    }

    /// The JetStream filter subject NATS's MQTT listener gives an MQTT topic filter.
    static func subject(_ filter: String) -> String {
        "$MQTT.msgs."
            + filter.split(separator: "/", omittingEmptySubsequences: false).map { $0 == "+" ? "*" : $0 == "#" ? ">" : String($0) }.joined(separator: ".")
    }
}
