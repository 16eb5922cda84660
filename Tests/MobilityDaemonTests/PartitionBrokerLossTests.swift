import Foundation
import Glibc
import Simulator
import TestSupport
import Testing

/// An instance cut off from its NATS node for good gives its partitions up, on real
/// nats-server (3 nodes from the shipped configuration) and PostgreSQL.
@Suite(.serialized) struct PartitionBrokerLossTests {
    /// Regression: an instance whose NATS node was lost and did not come back kept renewing its
    /// leases with nothing to consume, so its partitions waited for good. Now its sessions'
    /// outage reaches the lease, it gives every lease up and leaves, and the other instance holds
    /// all 8 within the lease (the bound) + the lease (the takeover) + heartbeats; the replay's
    /// alerts, exactly.
    @Test func anInstanceWhoseNATSNodeIsLostForGoodGivesItsPartitionsUp() throws {
        let records = Array(Population(users: 16, days: 40, seed: 23).traffic())
        let expected = try DurabilityTests.expectedAlerts(records)
        #expect(expected.count > 5)
        let server = try PostgresServer.shared()
        let store = try server.createDatabase()
        let database = String(store.split(separator: "/").last!)
        let nats = try NATSCluster(size: 3, partitions: 8)
        let rec = try nats.recorder(2, filters: ["mobility/v1/users/+/alerts/#"])
        let pub = try nats.recorder(2, filters: [])
        let a = try PartitionFailoverTests.instance("a", broker: nats.daemonArguments(1), store: store, partitions: 8)
        let b = try PartitionFailoverTests.instance("b", broker: nats.daemonArguments(2), store: store, partitions: 8)
        defer {
            _ = a.stop(signal: SIGKILL)
            _ = b.stop(signal: SIGKILL)
        }
        let leases = { (name: String) in PartitionFailoverTests.leases(server, database, of: name) }
        #expect(eventually(timeout: 30) { leases("a") == 4 && leases("b") == 4 }, "\(a.log)\n\(b.log)")
        #expect(eventually(timeout: 30) { PartitionedDaemonTests.subscribed(a).union(PartitionedDaemonTests.subscribed(b)).count == 8 })
        let half = records.count / 2
        try PartitionFailoverTests.publish(records[..<half], pub)
        #expect(eventually(timeout: 60) { !rec.messages().isEmpty })
        nats.stop(1, signal: SIGKILL)
        let killed = Date()
        try PartitionFailoverTests.publish(records[half...], pub)
        #expect(eventually(timeout: 30) { leases("b") == 8 }, "\(a.log)\n\(b.log)")
        let moved = Date().timeIntervalSince(killed)
        #expect(moved < 10, "partitions moved \(moved) s after the node's loss (--lease 2)")
        #expect(a.log.contains("giving up every lease"), "\(a.log)")
        #expect(leases("a") == 0)
        try PartitionFailoverTests.expectReplaysAlerts(
            rec, expected, store: (server, database), records: records, nats: nats, a.log + "\n" + b.log)
        #expect(a.isRunning)  // it waits for its broker, holding nothing
        print("NATS node of an instance lost for good: its partitions held by the other instance \(String(format: "%.1f", moved)) s after the kill")
        #expect(b.stop() == 0)
    }
}
