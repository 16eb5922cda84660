import Foundation
import Glibc
import Ingest
import MobilityModel
import RuleEngine
import Simulator
import Synchronization
import TestSupport
import Testing

/// Failures around partitioned instances, each on real nats-server and PostgreSQL: an
/// owner paused past its lease, a fenced commit, a PostgreSQL restart, the loss of a NATS node.
/// Each ends with the alerts of `mobilityctl replay`, exactly: none lost, none re-fired (a
/// re-fired alert has another id or time, so another text); duplicates of one text are allowed
/// (outputs are at least once).
@Suite(.serialized) struct PartitionFailoverTests {
    /// A partitioned mobilityd (its own state directory, a free metrics port).
    static func instance(_ name: String, broker: [String], store: String, partitions: Int, lease: Int = 2) throws -> ChildProcess {
        let state = TemporaryPath.make("mw-state")
        return try ChildProcess(
            ChildProcess.product("mobilityd"),
            broker + [
                "--rules", RepoPaths.rules, "--state", state, "--clock", "event", "--instance", name,
                "--metrics-address", "127.0.0.1:\(try freePort())", "--publish-series", "false", "--log-level", "debug",
                "--store", store, "--partitions", String(partitions), "--lease", String(lease), "--intake", "mqtt"
            ])
    }

    static func publish(_ records: ArraySlice<TrafficRecord>, _ pub: MQTTRecorder) throws {
        for r in records { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
    }

    /// `records` published from a thread of its own: the traffic goes on while partitions move,
    /// and how long publishing it takes on a loaded machine is not counted as the move.
    final class BackgroundPublish: Sendable {
        private let done = DispatchSemaphore(value: 0)
        private let failure = Mutex<String?>(nil)

        init(_ records: ArraySlice<TrafficRecord>, _ pub: MQTTRecorder) {
            let records = Array(records)
            Thread { [self] in
                do { try PartitionFailoverTests.publish(records[...], pub) } catch { failure.withLock { $0 = "\(error)" } }
                done.signal()
            }.start()
        }

        /// Nil once every record was published within `timeout`, else why not.
        func finished(timeout: TimeInterval = 120) -> String? {
            guard done.wait(timeout: .now() + timeout) == .success else { return "the records were not published in \(Int(timeout)) s" }
            return failure.withLock { $0 }
        }
    }

    /// The live leases held by instance `name` (its owner is `name@host pid N`).
    static func leases(_ server: PostgresServer, _ database: String, of name: String) -> Int {
        Int((try? server.psql("SELECT count(*) FROM partitions WHERE lease_until > now() AND owner LIKE '\(name)@%'", database: database)) ?? "") ?? -1
    }

    /// Lines of `p`'s log containing `text`.
    static func lines(_ p: ChildProcess, _ text: String) -> Int { p.log.split(separator: "\n").filter { $0.contains(text) }.count }

    /// Waits for every expected alert, then checks that nothing else was published. On a timeout
    /// the message starts with what tells a lost input from a lost output: the alerts missing,
    /// each user's event time in the store against its last sample's, the outbox left, each NATS
    /// node's warnings; then `logs`.
    static func expectReplaysAlerts(
        _ rec: MQTTRecorder, _ expected: [String], timeout: TimeInterval = 90, store: (PostgresServer, String)? = nil, records: [TrafficRecord] = [],
        nats: NATSCluster? = nil, _ logs: @autoclosure () -> String
    ) throws {
        let all = eventually(timeout: timeout) { Set(rec.messages().filter { !$0.payload.isEmpty }.map(\.text)).isSuperset(of: expected) }
        if !all {
            let live = Set(rec.messages().filter { !$0.payload.isEmpty }.map(\.text))
            let lost = expected.filter { !live.contains($0) }
            let missing = lost.map { text -> String in
                let o = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
                return ["user", "rule", "day", "status"].map { "\(o[$0] ?? "?")" }.joined(separator: " ")
            }
            // A clean-session recorder that reconnected lost what was stored for it meanwhile.
            let diagnosis = "recorder connections: \(rec.connectionCount)\n" + Self.diagnosis(store: store, records: records, nats: nats)
            let head = "\(lost.count) of \(expected.count) alerts not received in \(Int(timeout)) s (user rule day status)"
            Issue.record("\(head):\n\(missing.joined(separator: "\n"))\n\(diagnosis)\n\(logs())")
        }
        #expect(try rec.barrier())
        let live = rec.messages().filter { !$0.payload.isEmpty }.map(\.text)
        if Set(live) != Set(expected) {
            Issue.record(
                "lost: \(Set(expected).subtracting(live).count), spurious: \(Set(live).subtracting(expected))\n\(Self.diagnosis(store: store, records: records, nats: nats))\n\(logs())"
            )
        }
    }

    /// Each user's partition and event time in the store beside its last sample's, the outbox's
    /// length, and each NATS node's warnings and errors (the last 40 lines of each).
    static func diagnosis(store: (PostgresServer, String)?, records: [TrafficRecord], nats: NATSCluster?) -> String {
        var out = ""
        if let (server, database) = store {
            var last: [String: String] = [:]
            for r in records where r.topic.hasSuffix("/samples") {
                let user = r.topic.split(separator: "/").dropLast().last.map(String.init) ?? "?"
                last[user] = String(String(decoding: r.payload, as: UTF8.self).prefix(160))
            }
            let users =
                (try? server.psql("SELECT partition, user_id, event_now, applied_seq FROM users ORDER BY partition, user_id", database: database))
                ?? "(psql failed)"
            out += "users in the store (partition|user|event_now|applied_seq):\n\(users)\n"
            // What the engine recorded as alert transitions: an alert here and not received was lost on the way out.
            let alerts =
                (try? server.psql("SELECT user_id, key, day FROM history WHERE kind = 1 ORDER BY user_id, day, key", database: database)) ?? "(psql failed)"
            out += "alert history in the store (user|alert|day):\n\(alerts)\nlast sample of each user:\n"
            out += last.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: "\n")
            // What waits to be published, by the topic's last segment (`rejected`, `acks`, an alert's rule, …).
            let waiting = "SELECT regexp_replace(topic, '^.*/', ''), count(*), min(id), max(id) FROM outbox GROUP BY 1 ORDER BY 2 DESC LIMIT 12"
            out += "\noutbox (last segment|items|first id|last id):\n" + ((try? server.psql(waiting, database: database)) ?? "?") + "\n"
        }
        if let nats {
            for i in nats.nodes.indices {
                let lines = nats.log(i).split(separator: "\n").filter { $0.contains("[WRN]") || $0.contains("[ERR]") }
                out += "NATS n\(i) warnings and errors (\(lines.count)):\n" + lines.suffix(40).joined(separator: "\n") + "\n"
                out += "NATS n\(i) consumers:\n" + nats.consumers(i) + "\n"
            }
        }
        return out
    }

    /// A paused owner (SIGSTOP past its lease) cannot commit after resuming. While it
    /// is stopped the other instance takes its partitions (token + 1) and its MQTT sessions; on
    /// SIGCONT the old owner learns it lost them (its heartbeat, or its first fenced commit),
    /// stops processing them without a loop of failing commits, and rejoins: the two share the 8
    /// partitions again. The alerts are the replay's, with the same ids.
    @Test func pausedOwnerIsFencedAndRejoinsWithoutRefiring() throws {
        let run = try PartitionFailoverTests.TwoInstances(size: 1, client: 0, nodeA: 0, nodeB: 0)
        defer { withExtendedLifetime(run) {} }
        let (records, rec, a, b) = (run.records, run.rec, run.a, run.b)
        #expect(run.expected.count > 5)
        let quarter = records.count / 4
        try run.publish(..<(2 * quarter))
        #expect(eventually(timeout: 60) { !rec.messages().isEmpty })
        a.signal(SIGSTOP)
        let paused = Date()
        // Published while a is stopped: a's share waits in the broker for a's sessions' next owner.
        try run.publish((2 * quarter)..<(3 * quarter))
        #expect(eventually(timeout: 20) { run.leases("b") == 8 }, "\(b.log)")
        let taken = Date().timeIntervalSince(paused)
        #expect(eventually(timeout: 20) { Self.lines(b, "partition session subscribed") >= 12 }, "\(b.log)")  // its 4 and a's 4
        let failuresBefore = Self.lines(a, "state commit")
        a.signal(SIGCONT)
        let resumed = Date()
        #expect(eventually(timeout: 10) { a.log.contains("partition leases lost") || a.log.contains("a commit was fenced") }, "\(a.log)")
        let noticed = Date().timeIntervalSince(resumed)
        // Rejoined: b gives up half (it holds more than its share of two), a claims them.
        #expect(eventually(timeout: 30) { run.leases("a") == 4 && run.leases("b") == 4 }, "\(a.log)\n\(b.log)")
        let rebalanced = Date().timeIntervalSince(resumed)
        try run.publish((3 * quarter)...)
        try run.expectReplaysAlerts()
        // No loop of failing commits: at most one refused commit per shard of the old run.
        let refused = Self.lines(a, "state commit") - failuresBefore
        #expect(refused <= 1, "\(refused) refused commits after the resume:\n\(a.log)")
        #expect(a.isRunning && b.isRunning)
        let by = a.log.contains("a commit was fenced") ? "a fenced commit" : "the heartbeat"
        print(
            "paused owner: partitions taken \(String(format: "%.1f", taken)) s after SIGSTOP; after SIGCONT the loss noticed in \(String(format: "%.2f", noticed)) s (by \(by)), rebalanced 4/4 in \(String(format: "%.1f", rebalanced)) s, \(refused) refused commits logged"
        )
        #expect(a.stop() == 0)
        #expect(b.stop() == 0)
    }

    /// Regression: a fenced commit left the run going, failing every batch until the next
    /// heartbeat (a third of the lease: here 8 s). Another owner takes partition 0 and gives it
    /// back (its token raised by one, released) right after this instance's claim: the first
    /// fenced write — a shard's commit, or with the JetStream intake the partition's recorded
    /// sequence — stops the run at once, the supervisor heartbeats, finds partition 0 lost,
    /// claims it again and rejoins (each JetStream partition resuming after its committed
    /// sequence on a new consumer); the replay's alerts, exactly. With either intake.
    @Test(arguments: Intake.allCases) func aFencedCommitStopsTheRunAtOnceAndRejoins(intake: Intake) throws {
        let records = ScenarioVerifier.traffic([try Scenario.load(RepoPaths.root + "/simulator/scenarios/jamie-plateau.scenario")])
        let expected = try DurabilityTests.expectedAlerts(records)
        #expect(expected.count >= 2)
        let server = try PostgresServer.shared()
        let store = try server.createDatabase()
        let database = String(store.split(separator: "/").last!)
        let nats = try NATSCluster(size: 1, partitions: 4, edits: intake.edits)
        let rec = try nats.recorder(0, filters: ["mobility/v1/users/+/alerts/#"])
        let pub = try nats.recorder(0, filters: [])
        let a = try intake.start("a", nats: nats, node: 0, store: store, partitions: 4, lease: 24)
        defer { _ = a.stop(signal: SIGKILL) }
        #expect(eventually(timeout: 40) { intake.ready(a).count == 4 }, "\(a.log)")
        let takenOver = Date()
        try server.psql("UPDATE partitions SET token = token + 1, owner = 'intruder', lease_until = '-infinity' WHERE partition = 0", database: database)
        let half = records.count / 2
        try Self.publish(records[..<half], pub)
        #expect(eventually(timeout: 20) { a.log.contains("partition leases lost") }, "\(a.log)")
        let noticed = Date().timeIntervalSince(takenOver)
        #expect(noticed < 3, "the lost partition noticed \(noticed) s after the takeover (the heartbeat is every 8 s)")
        // The fenced write stopped the run, not the next heartbeat: the fence's line comes first.
        let fencedAt = a.log.range(of: "a commit was fenced")?.lowerBound
        let lostAt = a.log.range(of: "partition leases lost")?.lowerBound
        #expect(fencedAt != nil && lostAt != nil && fencedAt! < lostAt!, "\(a.log)")
        #expect(eventually(timeout: 20) { Self.leases(server, database, of: "a") == 4 && intake.ready(a).count == 4 }, "\(a.log)")
        let refused = Self.lines(a, "state commit")
        #expect(refused <= 1, "\(refused) refused commits:\n\(a.log)")
        try Self.publish(records[half...], pub)
        try Self.expectReplaysAlerts(rec, expected, store: (server, database), records: records, nats: nats, a.log)
        print(
            "\(intake) intake, fenced commit: the run stopped and the loss noticed \(String(format: "%.2f", noticed)) s after the takeover; \(refused) refused commits"
        )
        #expect(a.stop() == 0)
    }

    /// PostgreSQL stops mid-replay for longer than the lease and comes back. The
    /// instances neither exit nor acknowledge what they could not commit: their runs stop when
    /// the leases lapse unrenewed, the processes wait, reclaim their shares when the database is
    /// back and finish with the replay's alerts.
    @Test func postgresRestartMidReplayInstancesWaitAndResume() throws {
        let records = Array(Population(users: 16, days: 40, seed: 29).traffic())
        let expected = try DurabilityTests.expectedAlerts(records)
        #expect(expected.count > 3)
        let server = try PostgresServer()  // its own: this test stops it
        let store = try server.createDatabase()
        let database = String(store.split(separator: "/").last!)
        let nats = try NATSCluster(size: 1, partitions: 8, edits: NATSCluster.mqttIntake)
        let rec = try nats.recorder(0, filters: ["mobility/v1/users/+/alerts/#"])
        let pub = try nats.recorder(0, filters: [])
        let a = try Self.instance("a", broker: nats.daemonArguments(0), store: store, partitions: 8)
        let b = try Self.instance("b", broker: nats.daemonArguments(0), store: store, partitions: 8)
        defer {
            _ = a.stop(signal: SIGKILL)
            _ = b.stop(signal: SIGKILL)
        }
        #expect(eventually(timeout: 30) { Self.leases(server, database, of: "a") == 4 && Self.leases(server, database, of: "b") == 4 }, "\(a.log)\n\(b.log)")
        #expect(eventually(timeout: 30) { PartitionedDaemonTests.subscribed(a).union(PartitionedDaemonTests.subscribed(b)).count == 8 })
        let quarter = records.count / 4
        try Self.publish(records[..<(2 * quarter)], pub)
        #expect(eventually(timeout: 60) { !rec.messages().isEmpty })
        server.stop()
        let down = Date()
        try Self.publish(records[(2 * quarter)..<(3 * quarter)], pub)
        // Past the lease: both runs stop (their leases lapsed unrenewed), the processes stay.
        #expect(
            eventually(timeout: 20) { a.log.contains("partition leases expired unrenewed") && b.log.contains("partition leases expired unrenewed") },
            "\(a.log)\n\(b.log)")
        #expect(a.isRunning && b.isRunning)
        try server.start()
        let outage = Date().timeIntervalSince(down)
        let back = Date()
        #expect(eventually(timeout: 30) { Self.leases(server, database, of: "a") == 4 && Self.leases(server, database, of: "b") == 4 }, "\(a.log)\n\(b.log)")
        let resumed = Date().timeIntervalSince(back)
        try Self.publish(records[(3 * quarter)...], pub)
        try Self.expectReplaysAlerts(rec, expected, store: (server, database), records: records, nats: nats, a.log + "\n" + b.log)
        #expect(a.isRunning && b.isRunning)
        print("PostgreSQL down \(String(format: "%.1f", outage)) s mid-replay: leases held again \(String(format: "%.1f", resumed)) s after its restart")
        #expect(a.stop() == 0)
        #expect(b.stop() == 0)
    }

    /// `kill -9` of a NATS node mid-replay (3 nodes, `stream_replicas: 3`), the node
    /// no client is connected to, so that what is tested is JetStream's: the stream and the
    /// partitions' consumers (sessions or pull consumers) lose a replica, perhaps their leader,
    /// and carry on on the other two. Nothing lost, nothing re-fired.
    @Test(arguments: Intake.allCases) func killNineOfANATSNodeLosesNothing(intake: Intake) throws {
        let run = try PartitionFailoverTests.TwoInstances(size: 3, client: 2, nodeA: 1, nodeB: 2, intake: intake)
        defer { withExtendedLifetime(run) {} }
        let (records, rec, nats, a, b) = (run.records, run.rec, run.nats, run.a, run.b)
        #expect(run.expected.count > 3)
        let half = records.count / 2
        try run.publish(..<half)
        #expect(eventually(timeout: 60) { !rec.messages().isEmpty })
        nats.stop(0, signal: SIGKILL)
        try run.publish(half...)
        try run.expectReplaysAlerts()
        #expect(a.isRunning && b.isRunning)
        #expect(a.stop() == 0)
        #expect(b.stop() == 0)
    }

    /// `kill -9` of the NATS node an instance is connected to, mid-replay, and its restart: the
    /// instance's sessions reconnect to it (its one address) and find their streams, kept by the
    /// other two nodes meanwhile. Nothing lost, nothing re-fired.
    @Test func killNineOfAnInstancesNATSNodeAndItsReturnLoseNothing() throws {
        let run = try PartitionFailoverTests.TwoInstances(size: 3, client: 2, nodeA: 1, nodeB: 2)
        defer { withExtendedLifetime(run) {} }
        let (records, rec, pub, nats, a, b) = (run.records, run.rec, run.pub, run.nats, run.a, run.b)
        #expect(run.expected.count > 5)
        let half = records.count / 2
        try run.publish(..<half)
        #expect(eventually(timeout: 60) { !rec.messages().isEmpty })
        let before = Self.lines(a, "partition session subscribed")
        nats.stop(1, signal: SIGKILL)
        try run.publish(half...)
        // Node 1 comes back once node 2 has stored everything (PUBACKs stall while the streams
        // node 1 led elect new leaders): what is tested is a's sessions finding their backlog.
        #expect(eventually(timeout: 60) { pub.acknowledgedCount >= records.count }, "\(pub.acknowledgedCount) of \(records.count) acknowledged")
        try nats.start(1)
        let restarted = Date()
        #expect(eventually(timeout: 60) { Self.lines(a, "partition session subscribed") >= before + 4 }, "\(a.log)")
        let back = Date().timeIntervalSince(restarted)
        try run.expectReplaysAlerts()
        print("NATS node of an instance killed and restarted: its 4 sessions subscribed again \(String(format: "%.1f", back)) s after the node's restart")
        #expect(a.stop() == 0)
        #expect(b.stop() == 0)
    }
}
