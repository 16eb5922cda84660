import Foundation
import Glibc
import MobilityModel
import Simulator
import TestSupport
import Testing

import struct StateStore.PartitionSet

/// Partitioned input on real NATS servers (JetStream, MQTT listener, the shipped mapping of the
/// four input kinds) with the state in a real PostgreSQL.
@Suite(.serialized) struct PartitionedDaemonTests {
    /// Our user → partition function is the broker's: every user lands on the partition subject
    /// we compute, and the daemon's own five-level outputs are not remapped.
    @Test func theBrokersPartitionOfAUserIsOurs() throws {
        let nats = try NATSCluster(size: 1, partitions: 8)
        let parts = try nats.recorder(0, filters: ["part/+/mobility/v1/users/+/+"])
        let acks = try nats.recorder(0, filters: ["mobility/v1/users/+/acks"])
        let pub = try nats.recorder(0, filters: [])
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

    /// A partitioned mobilityd on `broker` (its own state directory, a free metrics port).
    static func instance(_ name: String, broker: [String], store: String, partitions: Int) throws -> ChildProcess {
        let state = TemporaryPath.make("mw-state")
        return try ChildProcess(
            ChildProcess.product("mobilityd"),
            broker + [
                "--rules", RepoPaths.rules, "--state", state, "--clock", "event", "--instance", name,
                "--metrics-address", "127.0.0.1:\(try freePort())", "--publish-series", "false", "--log-level", "debug",
                "--store", store, "--partitions", String(partitions), "--lease", "2", "--intake", "mqtt"
            ])
    }

    /// The partitions whose session subscribed (at least once) in `p`'s log.
    static func subscribed(_ p: ChildProcess) -> Set<String> {
        Set(
            p.log.split(separator: "\n").filter { $0.contains("partition session subscribed") }.compactMap {
                $0.split(separator: "partition=").last.map(String.init)
            })
    }

    /// SIGTERM stops a partitioned instance within seconds, mid-replay (the run under the
    /// supervisor once set SIGTERM back to ignored over libdispatch's handler, and the instance
    /// was killed after 10 s), with either intake, and its successor on the same partitions loses
    /// nothing: the replay's alerts, exactly.
    @Test(arguments: PartitionFailoverTests.Intake.allCases)
    func sigtermStopsAPartitionedInstanceWithinSecondsAndLosesNothing(intake: PartitionFailoverTests.Intake) throws {
        let records = ScenarioVerifier.traffic([try Scenario.load(RepoPaths.root + "/simulator/scenarios/jamie-plateau.scenario")])
        let expected = try DurabilityTests.expectedAlerts(records)
        #expect(expected.count >= 2)
        let server = try PostgresServer.shared()
        let store = try server.createDatabase()
        let nats = try NATSCluster(size: 1, partitions: 4, edits: intake.edits)
        let rec = try nats.recorder(0, filters: ["mobility/v1/users/+/alerts/#"])
        let pub = try nats.recorder(0, filters: [])
        let a = try intake.start("a", nats: nats, node: 0, store: store, partitions: 4)
        defer { _ = a.stop(signal: SIGKILL) }
        #expect(eventually(timeout: 30) { intake.ready(a).count == 4 }, "\(a.log)")
        let half = records.count / 2
        for r in records[..<half] { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
        let asked = Date()
        let code = a.stop(timeout: 10)
        let took = Date().timeIntervalSince(asked)
        #expect(code == 0, "\(a.log)")
        #expect(took < 5, "SIGTERM took \(took) s")
        let b = try intake.start("b", nats: nats, node: 0, store: store, partitions: 4)
        defer { _ = b.stop(signal: SIGKILL) }
        for r in records[half...] { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
        #expect(eventually(timeout: 60) { Set(rec.messages().filter { !$0.payload.isEmpty }.map(\.text)).isSuperset(of: expected) }, "\(b.log)")
        #expect(try rec.barrier())
        let live = rec.messages().filter { !$0.payload.isEmpty }.map(\.text)
        #expect(Set(live) == Set(expected), "lost: \(Set(expected).subtracting(live).count), spurious: \(Set(live).subtracting(expected).count)")
        print("SIGTERM of a partitioned instance (\(intake) intake) mid-replay: exit \(code) after \(String(format: "%.2f", took)) s")
        #expect(b.stop() == 0)
    }

    /// Three NATS nodes, PostgreSQL, three mobilityd instances (one per node) on 8 partitions,
    /// the shipped scenarios and a population: the alerts of the replay, exactly; `kill -9`
    /// of one mid-replay moves its partitions to the other two within the lease bound, loses
    /// nothing and re-fires nothing.
    @Test func killNineOfAnInstanceMovesItsPartitionsAndLosesNothing() throws {
        let dir = RepoPaths.root + "/simulator/scenarios"
        let scenarios = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".scenario") }.sorted().map {
            try Scenario.load(dir + "/" + $0)
        }
        #expect(scenarios.count == 11)
        let records = Array(Population(users: 16, days: 40, seed: 23).traffic()) + ScenarioVerifier.traffic(scenarios)
        let expected = try DurabilityTests.expectedAlerts(records)
        #expect(expected.count > 20)
        let server = try PostgresServer.shared()
        let store = try server.createDatabase()
        let database = String(store.split(separator: "/").last!)
        let nats = try NATSCluster(size: 3, partitions: 8, edits: NATSCluster.mqttIntake)
        let rec = try nats.recorder(0, filters: ["mobility/v1/users/+/alerts/#"])
        let pub = try nats.recorder(0, filters: [])
        let a = try Self.instance("a", broker: nats.daemonArguments(0), store: store, partitions: 8)
        let b = try Self.instance("b", broker: nats.daemonArguments(1), store: store, partitions: 8)
        let c = try Self.instance("c", broker: nats.daemonArguments(2), store: store, partitions: 8)
        defer {
            _ = a.stop(signal: SIGKILL)
            _ = b.stop(signal: SIGKILL)
            _ = c.stop(signal: SIGKILL)
        }
        // Every partition's session subscribed once: from then on the broker keeps its messages.
        #expect(eventually(timeout: 30) { Self.subscribed(a).union(Self.subscribed(b)).union(Self.subscribed(c)).count == 8 }, "\(a.log)\n\(b.log)")
        #expect(
            eventually(timeout: 15) { (try? server.psql("SELECT count(DISTINCT owner) FROM partitions WHERE lease_until > now()", database: database)) == "3" })
        // 3, 3 and 2: each holds its share, ⌈8 / 3⌉ at most.
        #expect(
            eventually(timeout: 15) {
                (try? server.psql("SELECT count(*) FROM partitions WHERE lease_until > now() AND owner LIKE 'a@%'", database: database)).flatMap { Int($0) }
                    ?? 0 >= 2
            })
        let half = records.count / 2
        for r in records[..<half] { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
        #expect(eventually(timeout: 60) { !rec.messages().isEmpty })
        a.signal(SIGKILL)
        _ = a.wait()
        let killed = Date()
        let rest = PartitionFailoverTests.BackgroundPublish(records[half...], pub)
        // b and c hold all 8 (4 each) within the lease (2 s) and a heartbeat (0.67 s), plus their restarts.
        #expect(
            eventually(timeout: 20) {
                (try? server.psql(
                    "SELECT string_agg(n::text, ',' ORDER BY o) FROM (SELECT left(owner, 1) o, count(*) n FROM partitions WHERE lease_until > now() GROUP BY 1) s",
                    database: database)) == "4,4"
            })
        let moved = Date().timeIntervalSince(killed)
        #expect(moved < 8, "partitions moved after \(moved) s\n--- b\n\(b.log)\n--- c\n\(c.log)")
        #expect(rest.finished() == nil)
        #expect(
            eventually(timeout: 90) { Set(rec.messages().filter { !$0.payload.isEmpty }.map(\.text)).isSuperset(of: expected) },
            "lost: \(Set(expected).subtracting(rec.messages().map(\.text)).count)")
        #expect(try rec.barrier())
        let live = rec.messages().filter { !$0.payload.isEmpty }.map(\.text)
        #expect(Set(live) == Set(expected), "lost: \(Set(expected).subtracting(live).count), spurious: \(Set(live).subtracting(expected).count)")
        print("partitions moved \(String(format: "%.1f", moved)) s after kill -9; \(live.count) alert messages for \(expected.count) alerts")
        #expect(b.stop() == 0)
        #expect(c.stop() == 0)
    }
}

extension PartitionedDaemonTests {
    /// The supervisor handles SIGTERM and SIGINT; its run keeps SIGHUP: a reload reaches the run,
    /// which goes on, and SIGTERM after it still stops the instance with 0, announced once.
    @Test func sighupReloadsThePartitionedRunAndSIGTERMStillStopsIt() throws {
        let server = try PostgresServer.shared()
        let store = try server.createDatabase()
        let nats = try NATSCluster(size: 1, partitions: 4, edits: NATSCluster.mqttIntake)
        let a = try Self.instance("a", broker: nats.daemonArguments(0), store: store, partitions: 4)
        defer { _ = a.stop(signal: SIGKILL) }
        #expect(eventually(timeout: 30) { Self.subscribed(a).count == 4 }, "\(a.log)")
        let reloads = PartitionFailoverTests.lines(a, "rules reloaded")
        a.signal(SIGHUP)
        #expect(eventually(timeout: 10) { PartitionFailoverTests.lines(a, "rules reloaded") == reloads + 1 }, "\(a.log)")
        #expect(a.isRunning)
        let asked = Date()
        #expect(a.stop(timeout: 10) == 0, "\(a.log)")
        #expect(Date().timeIntervalSince(asked) < 5)
        #expect(PartitionFailoverTests.lines(a, "shutting down") == 1, "\(a.log)")
    }
}
