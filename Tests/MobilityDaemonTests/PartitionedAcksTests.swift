import Foundation
import Glibc
import Simulator
import TestSupport
import Testing

/// Commit acknowledgements of a partitioned instance, on a real nats-server and PostgreSQL.
@Suite(.serialized) struct PartitionedAcksTests {
    /// A partition session (`--intake mqtt`: one message a commit, where the interval matters
    /// most) waits for each message's commit, but the gateway's acknowledgements
    /// are still coalesced by `--ack-interval` (per shard, per user) as on one instance: not one
    /// retained, replicated `users/{u}/acks` per input message; and the user's last sample is
    /// acknowledged.
    @Test func gatewayAcknowledgementsAreCoalescedByTheAckInterval() throws {
        let records = ScenarioVerifier.traffic([try Scenario.load(RepoPaths.root + "/simulator/scenarios/jamie-plateau.scenario")])
        let samples = records.filter { $0.topic.hasSuffix("/samples") }
        let text = String(decoding: samples.last!.payload, as: UTF8.self)
        let ids = text.components(separatedBy: "\"id\":\"").dropFirst().map { String($0.prefix { $0 != "\"" }) }
        let last = try #require(ids.last)
        let server = try PostgresServer.shared()
        let store = try server.createDatabase()
        let nats = try NATSCluster(size: 1, partitions: 2, edits: NATSCluster.mqttIntake)
        let acks = try nats.recorder(0, filters: ["mobility/v1/users/+/acks"])
        let pub = try nats.recorder(0, filters: [])
        let a = try ChildProcess(
            ChildProcess.product("mobilityd"),
            nats.daemonArguments(0) + [
                "--rules", RepoPaths.rules, "--state", TemporaryPath.make("mw-state"), "--clock", "event", "--instance", "a",
                "--metrics-address", "127.0.0.1:\(try freePort())", "--publish-series", "false", "--store", store, "--partitions", "2",
                "--lease", "2", "--ack-interval", "1000", "--intake", "mqtt"
            ])
        defer { _ = a.stop(signal: SIGKILL) }
        #expect(eventually(timeout: 30) { PartitionedDaemonTests.subscribed(a).count == 2 }, "\(a.log)")
        let started = Date()
        for r in records { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
        #expect(eventually(timeout: 60) { acks.messages().last?.text.contains("\"lastId\":\"\(last)\"") == true }, "\(acks.messages().last?.text ?? "none")")
        let took = Date().timeIntervalSince(started)
        let n = acks.messages().count
        // At most one round a second while the traffic lasted, and the last one.
        #expect(Double(n) <= took + 2, "\(n) acknowledgements for \(samples.count) samples messages in \(took) s")
        print(
            "partitioned acknowledgements: \(n) for \(samples.count) samples messages (\(records.count) messages) in \(String(format: "%.1f", took)) s, --ack-interval 1000"
        )
        #expect(a.stop() == 0)
    }
}
