import Foundation
import Glibc
import TestSupport
import Testing

/// mobilityd `--partitions` checks at start that the NATS broker has the JetStream settings
/// partitioned input relies on (deploy/nats-node.conf), on a real nats-server.
@Suite(.serialized) struct PartitionBrokerCheckTests {
    /// The shipped file passes: as shipped for the default intake, and with the edit it asks for
    /// (two lines uncommented) for `--intake mqtt`; the instance logs the check and takes its partitions.
    @Test(arguments: [false, true]) func aNodeWithTheShippedSettingsPasses(mqttIntake: Bool) throws {
        let server = try PostgresServer.shared()
        let store = try server.createDatabase()
        let nats = try NATSCluster(size: 1, partitions: 4, edits: mqttIntake ? NATSCluster.mqttIntake : [])
        let a =
            mqttIntake
            ? try PartitionFailoverTests.instance("a", broker: nats.daemonArguments(0), store: store, partitions: 4)
            : try PartitionStreamIntakeTests.instance("a", nats: nats, node: 0, store: store, partitions: 4, metricsPort: try freePort(), byDefault: true)
        defer { _ = a.stop(signal: SIGKILL) }
        #expect(
            eventually(timeout: 30) { (mqttIntake ? PartitionedDaemonTests.subscribed(a) : PartitionStreamIntakeTests.ready(a)).count == 4 }, "\(a.log)")
        let fit = a.log.split(separator: "\n").first { $0.contains("the broker's JetStream settings are fit for partitioned input") }
        #expect(fit != nil, "\(a.log)")
        print("start check: \(fit ?? "")")
        #expect(a.stop() == 0)
    }

    /// A broker whose partitions were consumed through MQTT sessions (`--intake mqtt`) is refused
    /// by an instance started with the default intake, JetStream's: exit 2 naming the partitions'
    /// sessions and `--intake mqtt`, instead of consuming the partitions anew beside sessions that
    /// keep every message. With `--intake mqtt` again the instance runs.
    @Test func partitionsConsumedThroughMQTTSessionsAreRefusedByTheDefaultIntake() throws {
        let server = try PostgresServer.shared()
        let store = try server.createDatabase()
        let nats = try NATSCluster(size: 1, partitions: 4, edits: NATSCluster.mqttIntake)
        let sessions = try PartitionFailoverTests.instance("a", broker: nats.daemonArguments(0), store: store, partitions: 4)
        defer { _ = sessions.stop(signal: SIGKILL) }
        #expect(eventually(timeout: 30) { PartitionedDaemonTests.subscribed(sessions).count == 4 }, "\(sessions.log)")
        #expect(sessions.stop() == 0, "\(sessions.log)")
        let upgraded = try PartitionStreamIntakeTests.instance(
            "b", nats: nats, node: 0, store: store, partitions: 4, metricsPort: try freePort(), byDefault: true)
        defer { _ = upgraded.stop(signal: SIGKILL) }
        #expect(upgraded.wait() == 2, "\(upgraded.log)")
        #expect(upgraded.log.contains("partitions 0,1,2,3 have MQTT sessions"), "\(upgraded.log)")
        #expect(upgraded.log.contains("run with --intake mqtt"), "\(upgraded.log)")
        let again = try PartitionFailoverTests.instance("c", broker: nats.daemonArguments(0), store: store, partitions: 4)
        defer { _ = again.stop(signal: SIGKILL) }
        #expect(eventually(timeout: 30) { PartitionedDaemonTests.subscribed(again).count == 4 }, "\(again.log)")
        #expect(again.stop() == 0, "\(again.log)")
    }

    /// The reverse: partitions consumed with the default intake keep their pull consumers, and
    /// an instance started with `--intake mqtt` is refused (exit 2, naming the consumers) instead
    /// of subscribing sessions that would begin at the stream's next message; the default intake
    /// runs on them again.
    @Test func partitionsWithTheJetStreamIntakesConsumersAreRefusedByTheMQTTIntake() throws {
        let server = try PostgresServer.shared()
        let store = try server.createDatabase()
        let nats = try NATSCluster(size: 1, partitions: 4, edits: NATSCluster.mqttIntake)
        let pulled = try PartitionStreamIntakeTests.instance(
            "a", nats: nats, node: 0, store: store, partitions: 4, metricsPort: try freePort(), byDefault: true)
        defer { _ = pulled.stop(signal: SIGKILL) }
        #expect(eventually(timeout: 30) { PartitionStreamIntakeTests.ready(pulled).count == 4 }, "\(pulled.log)")
        #expect(pulled.stop() == 0, "\(pulled.log)")
        let sessions = try PartitionFailoverTests.instance("b", broker: nats.daemonArguments(0), store: store, partitions: 4)
        defer { _ = sessions.stop(signal: SIGKILL) }
        #expect(sessions.wait() == 2, "\(sessions.log)")
        for k in 0..<4 { #expect(sessions.log.contains("mobilityd-part-\(k)-"), "\(sessions.log)") }
        #expect(sessions.log.contains("partitions 0,1,2,3 have the JetStream intake's consumers"), "\(sessions.log)")
        #expect(sessions.log.contains("run without --intake mqtt"), "\(sessions.log)")
        let again = try PartitionStreamIntakeTests.instance(
            "c", nats: nats, node: 0, store: store, partitions: 4, metricsPort: try freePort(), byDefault: true)
        defer { _ = again.stop(signal: SIGKILL) }
        #expect(eventually(timeout: 30) { PartitionStreamIntakeTests.ready(again).count == 4 }, "\(again.log)")
        #expect(again.stop() == 0, "\(again.log)")
    }

    /// `--intake mqtt` on a node with NATS's default MQTT settings (the shipped file as shipped,
    /// without the edit it asks for) is refused: exit 2 before any lease is claimed, each
    /// problem naming the setting and the file.
    @Test func aNodeWithTheDefaultMQTTSettingsIsRefusedByTheMQTTIntake() throws {
        let server = try PostgresServer.shared()
        let store = try server.createDatabase()
        let database = String(store.split(separator: "/").last!)
        let nats = try NATSCluster(size: 1, partitions: 4)
        let a = try PartitionFailoverTests.instance("a", broker: nats.daemonArguments(0), store: store, partitions: 4)
        defer { _ = a.stop(signal: SIGKILL) }
        let code = a.wait()
        #expect(code == 2, "\(a.log)")
        #expect(
            a.log.contains("max_ack_pending 1024; mobilityd --intake mqtt needs 1 (mqtt { max_ack_pending: 1 }, commented out in deploy/nats-node.conf"),
            "\(a.log)")
        #expect(a.log.contains("ack_wait 30.0 s; mobilityd --intake mqtt needs at most 5 s"), "\(a.log)")
        // Refused before the leases were opened: the database has no partition table at all.
        #expect(try server.psql("SELECT count(*) FROM pg_tables WHERE tablename = 'partitions'", database: database) == "0")
        print("refused: \(a.log.split(separator: "\n").filter { $0.contains("refusing") }.joined(separator: "\n"))")
    }

    /// A node started with NATS's default `max_ack_pending`, on which `clientID` leaves a
    /// persistent session subscribed to `filter`, then fixed (the shipped setting) and restarted.
    static func fixedAfterASession(of clientID: String, on filter: String) throws -> NATSCluster {
        let nats = try NATSCluster(size: 1, partitions: 4, edits: NATSCluster.mqttIntake + [("  max_ack_pending: 1\n", "  max_ack_pending: 1024\n")])
        try nats.recorder(0, filters: [filter], clientID: clientID, cleanSession: false).stop()
        nats.stop(0)
        try nats.edit(0, [("max_ack_pending: 1024", "max_ack_pending: 1")])
        try nats.start(0)
        try nats.waitReady(0)
        try nats.waitServingMQTT()
        return nats
    }

    /// A partition session created under the defaults keeps them after the node is fixed and
    /// restarted: refused, naming the partition and its consumer.
    @Test func aPartitionSessionCreatedUnderTheDefaultsIsRefusedAfterTheFix() throws {
        let server = try PostgresServer.shared()
        let store = try server.createDatabase()
        // Partition 2's session, as an instance of an older release left it (clean session off).
        let nats = try Self.fixedAfterASession(of: "mobilityd-part-2", on: "part/2/mobility/v1/users/+/+")
        let a = try PartitionFailoverTests.instance("a", broker: nats.daemonArguments(0), store: store, partitions: 4)
        defer { _ = a.stop(signal: SIGKILL) }
        #expect(a.wait() == 2, "\(a.log)")
        // The consumer found by the name NATS derives from the client id mobilityd-part-2.
        #expect(a.log.contains("partition 2's MQTT session (JetStream consumer APK1ylqK_"), "\(a.log)")
        #expect(!a.log.contains("the broker's MQTT sessions get"), "\(a.log)")  // the node itself is fixed
    }

    /// NATS down when the instance starts (it came up later at boot): the instance waits,
    /// saying so once, and passes the check and claims its partitions once the node is up.
    @Test func aBrokerThatComesUpLaterIsWaitedFor() throws {
        let server = try PostgresServer.shared()
        let store = try server.createDatabase()
        let nats = try NATSCluster(size: 1, partitions: 4, edits: NATSCluster.mqttIntake)
        nats.stop(0)
        let a = try PartitionFailoverTests.instance("a", broker: nats.daemonArguments(0), store: store, partitions: 4)
        defer { _ = a.stop(signal: SIGKILL) }
        let waiting = "cannot check the broker's JetStream settings yet; trying again until it answers"
        #expect(eventually(timeout: 30) { a.log.contains(waiting) }, "\(a.log)")
        #expect(a.isRunning, "\(a.log)")
        try nats.start(0)
        try nats.waitReady(0)
        #expect(eventually(timeout: 60) { PartitionedDaemonTests.subscribed(a).count == 4 }, "\(a.log)")
        #expect(a.log.contains("the broker's JetStream settings are fit for partitioned input"), "\(a.log)")
        let reasons = a.log.split(separator: "\n").filter { $0.contains(waiting) }.map { $0.split(separator: "error=").last ?? "" }
        #expect(!reasons.isEmpty && Set(reasons).count == reasons.count, "\(a.log)")  // each reason once
        #expect(a.stop() == 0)
    }

    /// SIGTERM while waiting for the broker stops the instance at once, with exit 0.
    @Test func sigtermWhileWaitingForTheBrokerExitsZero() throws {
        let server = try PostgresServer.shared()
        let store = try server.createDatabase()
        let nats = try NATSCluster(size: 1, partitions: 4, edits: NATSCluster.mqttIntake)
        nats.stop(0)
        let a = try PartitionFailoverTests.instance("a", broker: nats.daemonArguments(0), store: store, partitions: 4)
        defer { _ = a.stop(signal: SIGKILL) }
        #expect(eventually(timeout: 30) { a.log.contains("trying again until it answers") }, "\(a.log)")
        let sent = Date()
        #expect(a.stop(signal: SIGTERM, timeout: 5) == 0, "\(a.log)")
        #expect(Date().timeIntervalSince(sent) < 3, "\(a.log)")
    }

    /// A partition prefix with a `.` on nats-server 2.9, which refuses such MQTT topics: exit 2
    /// saying why, not a wait for a consumer that cannot come.
    @Test func aPrefixWithADotOnNATS29IsRefusedSayingWhy() throws {
        let server = try PostgresServer.shared()
        let store = try server.createDatabase()
        let nats = try NATSCluster(size: 1, partitions: 4, edits: NATSCluster.mqttIntake)
        let a = try PartitionFailoverTests.instance(
            "a", broker: nats.daemonArguments(0) + ["--partition-prefix", "part.eu/{k}/"], store: store, partitions: 4)
        defer { _ = a.stop(signal: SIGKILL) }
        #expect(a.wait(timeout: 30) == 2, "\(a.log)")
        #expect(a.log.contains("NATS before 2.10.8 refuses MQTT topics with a '.'"), "\(a.log)")
    }

    /// Another client's persistent session on a partition's filter (a `mosquitto_sub` while
    /// debugging), created under the defaults, is not the partition's session: the instance passes.
    @Test func anotherClientsConsumerOnAPartitionFilterIsNotThePartitionsSession() throws {
        let server = try PostgresServer.shared()
        let store = try server.createDatabase()
        let nats = try Self.fixedAfterASession(of: "debug-kim", on: "part/1/mobility/v1/users/+/+")
        let a = try PartitionFailoverTests.instance("a", broker: nats.daemonArguments(0), store: store, partitions: 4)
        defer { _ = a.stop(signal: SIGKILL) }
        #expect(eventually(timeout: 30) { PartitionedDaemonTests.subscribed(a).count == 4 }, "\(a.log)")
        #expect(!a.log.contains("refusing to start"), "\(a.log)")
        #expect(a.stop() == 0)
    }
}
