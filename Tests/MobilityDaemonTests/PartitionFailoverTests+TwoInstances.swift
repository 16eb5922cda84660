import Foundation
import Glibc
import Ingest
import Simulator
import TestSupport
import Testing

extension PartitionFailoverTests {
    /// How partitioned instances take their partitions in (`--intake`): MQTT sessions on the
    /// shipped node file, or JetStream consumers on NATS's consumer defaults.
    enum Intake: CustomStringConvertible, CaseIterable {
        case sessions, jetStream

        var description: String { self == .sessions ? "mqtt" : "jetstream" }

        /// The NATS cluster's node file edits this intake is tested with.
        var edits: [(String, String)] { self == .sessions ? NATSCluster.mqttIntake : [] }

        /// Instance `name` on node `node` of `nats`.
        func start(_ name: String, nats: NATSCluster, node: Int, store: String, partitions: Int, lease: Int = 2) throws -> ChildProcess {
            switch self {
            case .sessions: try PartitionFailoverTests.instance(name, broker: nats.daemonArguments(node), store: store, partitions: partitions, lease: lease)
            case .jetStream:
                try PartitionStreamIntakeTests.instance(
                    name, nats: nats, node: node, store: store, partitions: partitions, metricsPort: try freePort(), lease: lease)
            }
        }

        /// The partitions whose input `p`'s current run has ready (sessions subscribed, consumers made).
        func ready(_ p: ChildProcess) -> Set<String> {
            self == .jetStream ? PartitionStreamIntakeTests.ready(p) : PartitionedDaemonTests.subscribed(p)
        }
    }

    /// The failover tests' start: the 16-user cohort and its replayed alerts, a database, a NATS
    /// cluster of `size` nodes, the test's recorder and publisher on node `client`, and instances
    /// `a` and `b` on nodes `nodeA` and `nodeB` sharing 8 partitions — started, holding 4 leases
    /// each, with every partition's input ready: each session subscribed (`intake: .sessions`,
    /// the shipped node file) or each JetStream consumer made (`.jetStream`, on NATS's consumer
    /// defaults). Both instances are killed at the end (continued first, for a test that stopped one).
    final class TwoInstances {
        let records: [TrafficRecord]
        let expected: [String]
        let server: PostgresServer
        let database: String
        let nats: NATSCluster
        let rec: MQTTRecorder
        let pub: MQTTRecorder
        let a: ChildProcess
        let b: ChildProcess

        init(size: Int, client: Int, nodeA: Int, nodeB: Int, intake: PartitionFailoverTests.Intake = .sessions) throws {
            records = Array(Population(users: 16, days: 40, seed: 23).traffic())
            expected = try DurabilityTests.expectedAlerts(records)
            server = try PostgresServer.shared()
            let store = try server.createDatabase()
            database = String(store.split(separator: "/").last!)
            let nats = try NATSCluster(size: size, partitions: 8, edits: intake.edits)
            self.nats = nats
            rec = try nats.recorder(client, filters: ["mobility/v1/users/+/alerts/#"])
            pub = try nats.recorder(client, filters: [])
            let (a, b) = (
                try intake.start("a", nats: nats, node: nodeA, store: store, partitions: 8),
                try intake.start("b", nats: nats, node: nodeB, store: store, partitions: 8)
            )
            (self.a, self.b) = (a, b)
            #expect(eventually(timeout: 30) { self.leases("a") == 4 && self.leases("b") == 4 }, "\(a.log)\n\(b.log)")
            #expect(eventually(timeout: 30) { intake.ready(a).union(intake.ready(b)).count == 8 }, "\(a.log)\n\(b.log)")
        }

        deinit {
            a.signal(SIGCONT)
            _ = a.stop(signal: SIGKILL)
            _ = b.stop(signal: SIGKILL)
        }

        /// The live leases held by instance `name`.
        func leases(_ name: String) -> Int { PartitionFailoverTests.leases(server, database, of: name) }

        /// Publishes `records[range]` on the test's publisher.
        func publish(_ range: some RangeExpression<Int>) throws { try PartitionFailoverTests.publish(records[range], pub) }

        /// Waits for the replay's alerts, exactly, with the store's and NATS's account on a
        /// failure (``PartitionFailoverTests/expectReplaysAlerts(_:_:timeout:store:records:nats:_:)``).
        func expectReplaysAlerts() throws {
            try PartitionFailoverTests.expectReplaysAlerts(rec, expected, store: (server, database), records: records, nats: nats, a.log + "\n" + b.log)
        }
    }
}
