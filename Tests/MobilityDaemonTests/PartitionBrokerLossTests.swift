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
        let run = try PartitionFailoverTests.TwoInstances(size: 3, client: 2, nodeA: 1, nodeB: 2)
        defer { withExtendedLifetime(run) {} }
        let (records, rec, nats, a, b) = (run.records, run.rec, run.nats, run.a, run.b)
        #expect(run.expected.count > 5)
        let half = records.count / 2
        try run.publish(..<half)
        #expect(eventually(timeout: 60) { !rec.messages().isEmpty })
        nats.stop(1, signal: SIGKILL)
        let killed = Date()
        let rest = PartitionFailoverTests.BackgroundPublish(records[half...], run.pub)
        #expect(eventually(timeout: 30) { run.leases("b") == 8 }, "\(a.log)\n\(b.log)")
        let moved = Date().timeIntervalSince(killed)
        #expect(moved < 10, "partitions moved \(moved) s after the node's loss (--lease 2)")
        #expect(rest.finished() == nil)
        #expect(a.log.contains("giving up every lease"), "\(a.log)")
        #expect(run.leases("a") == 0)
        try run.expectReplaysAlerts()
        #expect(a.isRunning)  // it waits for its broker, holding nothing
        print("NATS node of an instance lost for good: its partitions held by the other instance \(String(format: "%.1f", moved)) s after the kill")
        #expect(b.stop() == 0)
    }
}
