import Foundation
import Glibc
import MobilityModel
import TestSupport
import Testing

import struct PostgresStore.PartitionSet

/// Partitioned input on real NATS servers (JetStream, MQTT listener, the shipped mapping of the
/// four input kinds) with the state in a real PostgreSQL.
@Suite(.serialized) struct PartitionedDaemonTests {
    /// Our user → partition function is the broker's: every user lands on the partition subject
    /// we compute, and the daemon's own five-level outputs are not remapped.
    @Test func theBrokersPartitionOfAUserIsOurs() throws {
        let nats = try NATSCluster(size: 1, partitions: 8)
        let url = nats.nodes[0].url
        let parts = try MQTTRecorder(url: url, filters: ["part/+/mobility/v1/users/+/+"])
        let acks = try MQTTRecorder(url: url, filters: ["mobility/v1/users/+/acks"])
        let pub = try MQTTRecorder(url: url, filters: [])
        let users = (0..<200).map { "user-\($0)" } + ["jamie", "a", "Z_9", "x-y-z"]
        for u in users {
            try pub.publish("mobility/v1/users/\(u)/samples", "{}")
            try pub.publish("mobility/v1/users/\(u)/profile", "{}")
        }
        try pub.publish("mobility/v1/users/jamie/acks", "{}")
        #expect(eventually(timeout: 20) { parts.messages().count == 2 * users.count })
        let ours = PartitionSet(count: 8, owned: [0])
        var seen: [Int: Int] = [:]
        for m in parts.messages() {
            let levels = m.topic.split(separator: "/").map(String.init)
            let (k, user) = (Int(levels[1])!, levels[5])
            #expect(k == ours.partition(of: user), "\(user): broker \(k), ours \(ours.partition(of: user))")
            seen[k, default: 0] += 1
        }
        #expect(seen.count == 8)  // all partitions used
        #expect(eventually(timeout: 10) { acks.messages().count == 1 })  // an output stays where it was
    }
}
