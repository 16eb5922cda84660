import JetStreamAccess
import Testing

@testable import MobilityDaemon

/// The rule of the start check, on facts as the inspector reads them.
@Suite struct JetStreamRequirementsTests {
    static func fit(clustered: Bool = true) -> JetStreamFacts {
        var f = JetStreamFacts()
        f.streams = ["$MQTT_msgs", "$MQTT_sess", "$MQTT_rmsgs"].map { .init(name: $0, replicas: clustered ? 3 : 1, clustered: clustered) }
        f.probe = .init(name: "probe", maxAckPending: 1, ackWaitNanoseconds: 2_000_000_000)
        f.partitions = [0: .init(name: "p0", maxAckPending: 1, ackWaitNanoseconds: 2_000_000_000)]
        return f
    }

    @Test func theShippedSettingsAreFitOnOneNodeAndOnACluster() {
        #expect(JetStreamRequirements.problems(Self.fit(), intake: .mqttSessions).isEmpty)
        #expect(JetStreamRequirements.problems(Self.fit(clustered: false), intake: .mqttSessions).isEmpty)
    }

    @Test func natsDefaultsAreRefusedNamingTheSettingAndTheFile() {
        var f = Self.fit()
        f.probe = .init(name: "probe", maxAckPending: 1024, ackWaitNanoseconds: 30_000_000_000)
        let p = JetStreamRequirements.problems(f, intake: .mqttSessions)
        #expect(p.count == 2)
        #expect(p.allSatisfy { $0.contains("deploy/nats-node.conf") })
        #expect(p.contains { $0.contains("max_ack_pending 1024") && $0.contains("max_ack_pending: 1 }") })
        #expect(p.contains { $0.contains("ack_wait 30.0 s") && $0.contains("at most 5 s") })
    }

    @Test func tooFewReplicasOnAClusterAndAMissingStreamAreRefused() {
        var f = Self.fit()
        f.streams[1].replicas = 2
        f.streams.removeFirst()
        let p = JetStreamRequirements.problems(f, intake: .mqttSessions)
        #expect(p.contains { $0.contains("no JetStream stream $MQTT_msgs") })
        #expect(p.contains { $0.contains("$MQTT_sess has 2 replicas") && $0.contains("stream_replicas: 3") })
    }

    @Test func aPartitionSessionCreatedUnderOtherSettingsIsRefused() {
        var f = Self.fit()
        f.partitions[5] = .init(name: "abc_def", maxAckPending: 1024, ackWaitNanoseconds: 2_000_000_000)
        let p = JetStreamRequirements.problems(f, intake: .mqttSessions)
        #expect(p.count == 1)
        #expect(p.first?.contains("partition 5's MQTT session (JetStream consumer abc_def") == true)
    }

    @Test func noProbeConsumerIsRefused() {
        var f = Self.fit()
        f.probe = nil
        #expect(JetStreamRequirements.problems(f, intake: .mqttSessions).count == 1)
    }

    @Test func partitionsNeedNATSURLsWithoutCredentials() throws {
        let base = ["--store", "postgres://mw@127.0.0.1:5432/state", "--partitions", "8"]
        #expect(throws: (any Error).self) { try DaemonConfiguration.load(arguments: base, environment: [:]) }
        #expect(throws: (any Error).self) { try DaemonConfiguration.load(arguments: base + ["--nats", "mqtt://127.0.0.1:4222"], environment: [:]) }
        #expect(throws: (any Error).self) { try DaemonConfiguration.load(arguments: base + ["--nats", "nats://u:p@127.0.0.1:4222"], environment: [:]) }
        #expect(throws: (any Error).self) { try DaemonConfiguration.load(arguments: ["--nats", "nats://127.0.0.1:4222"], environment: [:]) }
        let c = try DaemonConfiguration.load(arguments: base + ["--nats", "tls://n1:4222, tls://n2:4222"], environment: [:])
        #expect(c.partitioning?.natsURLs == ["tls://n1:4222", "tls://n2:4222"])
    }

    /// Consumed natively (`--intake jetstream`), the MQTT sessions' consumer settings do not
    /// matter: NATS's defaults pass; the streams still count, and partitions that still have
    /// the MQTT sessions of an earlier `--intake mqtt` are refused, named.
    @Test func theJetStreamIntakeNeedsTheStreamsAndNoPartitionSessions() {
        var f = Self.fit()
        f.partitions = [:]
        f.probe = .init(name: "probe", maxAckPending: 1024, ackWaitNanoseconds: 30_000_000_000)
        #expect(JetStreamRequirements.problems(f, intake: .jetStream).isEmpty)
        f.probe = nil
        #expect(JetStreamRequirements.problems(f, intake: .jetStream).isEmpty)
        f.streams[1].replicas = 1
        #expect(JetStreamRequirements.problems(f, intake: .jetStream).count == 1)
        f.streams[1].replicas = 3
        f.partitions[5] = .init(name: "abc_def", maxAckPending: 1, ackWaitNanoseconds: 2_000_000_000)
        f.partitions[2] = .init(name: "ghi_jkl", maxAckPending: 1, ackWaitNanoseconds: 2_000_000_000)
        let p = JetStreamRequirements.problems(f, intake: .jetStream)
        #expect(p.count == 1 && p[0].hasPrefix("partitions 2,5 have MQTT sessions (JetStream consumers ghi_jkl,abc_def of $MQTT_msgs)"), "\(p)")
        #expect(p[0].contains("run with --intake mqtt"))
    }

    /// The reverse: partitions that still have the JetStream intake's pull consumers are refused
    /// by `--intake mqtt`, named (a new session would skip what they have not committed); a
    /// partition whose list is empty is not.
    @Test func theMQTTIntakeIsRefusedWherePartitionsHaveTheJetStreamIntakesConsumers() {
        var f = Self.fit()
        f.pullConsumers = [3: [], 6: ["mobilityd-part-6-2-x-2", "mobilityd-part-6-1-y-1"], 1: ["mobilityd-part-1-1-y-1"]]
        let p = JetStreamRequirements.problems(f, intake: .mqttSessions)
        #expect(p.count == 1, "\(p)")
        #expect(
            p.first?.hasPrefix(
                "partitions 1,6 have the JetStream intake's consumers (mobilityd-part-1-1-y-1,mobilityd-part-6-1-y-1,mobilityd-part-6-2-x-2 of $MQTT_msgs)")
                == true, "\(p)")
        #expect(p.first?.contains("run without --intake mqtt") == true)
        f.partitions = [:]
        #expect(JetStreamRequirements.problems(f, intake: .jetStream).isEmpty)
    }

    @Test func theIntakeIsMQTTOrJetStreamAndNeedsPartitions() throws {
        let base = ["--store", "postgres://mw@127.0.0.1:5432/state", "--partitions", "8", "--nats", "tls://n1:4222"]
        #expect(try DaemonConfiguration.load(arguments: base, environment: [:]).partitioning?.intake == .jetStream)
        #expect(try DaemonConfiguration.load(arguments: base + ["--intake", "mqtt"], environment: [:]).partitioning?.intake == .mqttSessions)
        #expect(throws: (any Error).self) { try DaemonConfiguration.load(arguments: base + ["--intake", "kafka"], environment: [:]) }
        #expect(throws: (any Error).self) { try DaemonConfiguration.load(arguments: ["--intake", "jetstream"], environment: [:]) }
    }
}
