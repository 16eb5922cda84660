import Foundation
import Glibc
import Ingest
import Simulator
import TestSupport
import Testing

extension PartitionFailoverTests {
    /// The failover tests' start: the 16-user cohort and its replayed alerts, a database, a NATS
    /// cluster of `size` nodes, the test's recorder and publisher on node `client`, and instances
    /// `a` and `b` on nodes `nodeA` and `nodeB` sharing 8 partitions — started, holding 4 leases
    /// each, with every partition session subscribed. Both instances are killed at the end
    /// (continued first, for a test that stopped one).
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
            nats = try NATSCluster(size: size, partitions: 8)
            rec = try nats.recorder(client, filters: ["mobility/v1/users/+/alerts/#"])
            pub = try nats.recorder(client, filters: [])
            a = try PartitionFailoverTests.instance("a", broker: nats.daemonArguments(nodeA), store: store, partitions: 8)
            b = try PartitionFailoverTests.instance("b", broker: nats.daemonArguments(nodeB), store: store, partitions: 8)
            #expect(eventually(timeout: 30) { leases("a") == 4 && leases("b") == 4 }, "\(a.log)\n\(b.log)")
            #expect(eventually(timeout: 30) { PartitionedDaemonTests.subscribed(a).union(PartitionedDaemonTests.subscribed(b)).count == 8 })
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

        /// Waits for the replay's alerts, exactly (``PartitionFailoverTests/expectReplaysAlerts(_:_:timeout:store:records:nats:_:)``).
        func expectReplaysAlerts() throws {
            try PartitionFailoverTests.expectReplaysAlerts(rec, expected, store: (server, database), records: records, nats: nats, a.log + "\n" + b.log)
        }
    }
}
