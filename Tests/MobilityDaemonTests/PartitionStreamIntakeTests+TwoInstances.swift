import Foundation
import Glibc
import Ingest
import Simulator
import TestSupport
import Testing

extension PartitionStreamIntakeTests {
    /// The JetStream intake tests' start: the 16-user cohort and its replayed alerts, a database, a
    /// NATS cluster of `size` nodes with NATS's consumer defaults, the test's recorder and
    /// publisher on node `client`, and instances `a` and `b` (`--intake jetstream`) on nodes
    /// `nodeA` and `nodeB` sharing 8 partitions — started, holding 4 leases each, every
    /// partition's consumer made. Both instances are killed at the end (continued first, for a
    /// test that stopped one).
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

        init(size: Int, client: Int, nodeA: Int, nodeB: Int) throws {
            records = Array(Population(users: 16, days: 40, seed: 23).traffic())
            expected = try DurabilityTests.expectedAlerts(records)
            server = try PostgresServer.shared()
            let store = try server.createDatabase()
            database = String(store.split(separator: "/").last!)
            nats = try NATSCluster(size: size, partitions: 8, edits: PartitionStreamIntakeTests.defaults)
            rec = try nats.recorder(client, filters: ["mobility/v1/users/+/alerts/#"])
            pub = try nats.recorder(client, filters: [])
            a = try PartitionStreamIntakeTests.instance("a", nats: nats, node: nodeA, store: store, partitions: 8, metricsPort: try freePort())
            b = try PartitionStreamIntakeTests.instance("b", nats: nats, node: nodeB, store: store, partitions: 8, metricsPort: try freePort())
            let (a, b) = (a, b)
            #expect(eventually(timeout: 30) { self.leases("a") == 4 && self.leases("b") == 4 }, "\(a.log)\n\(b.log)")
            #expect(eventually(timeout: 30) { PartitionStreamIntakeTests.ready(a).union(PartitionStreamIntakeTests.ready(b)).count == 8 }, "\(a.log)\n\(b.log)")
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

        /// Waits for the replay's alerts, exactly, with the store's and NATS's account on a failure.
        func expectReplaysAlerts() throws {
            try PartitionFailoverTests.expectReplaysAlerts(rec, expected, store: (server, database), records: records, nats: nats, a.log + "\n" + b.log)
        }
    }
}
