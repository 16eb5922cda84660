import Foundation
import Glibc
import Ingest
import JetStreamAccess
import Simulator
import StateStore
import TestSupport
import Testing

/// Partitioned instances consuming their partitions natively from JetStream (`--intake
/// jetstream`), on a real nats-server whose MQTT settings are NATS's defaults (the shipped node
/// file as shipped) and a real PostgreSQL.
@Suite(.serialized) struct PartitionStreamIntakeTests {
    /// A partitioned mobilityd consuming through JetStream, with its metrics on `metricsPort`
    /// (`--intake jetstream` given, unless `byDefault`).
    static func instance(
        _ name: String, nats: NATSCluster, node: Int, store: String, partitions: Int, metricsPort: Int, lease: Int = 2, everyNode: Bool = false,
        byDefault: Bool = false
    ) throws -> ChildProcess {
        try ChildProcess(
            ChildProcess.product("mobilityd"),
            nats.daemonArguments(node, everyNode: everyNode) + [
                "--rules", RepoPaths.rules, "--state", TemporaryPath.make("mw-state"), "--clock", "event", "--instance", name,
                "--metrics-address", "127.0.0.1:\(metricsPort)", "--publish-series", "false", "--log-level", "debug",
                "--store", store, "--partitions", String(partitions), "--lease", String(lease)
            ] + (byDefault ? [] : ["--intake", "jetstream"]))
    }

    /// The partitions whose JetStream consumer `p`'s current run made ready (its log since its
    /// last `running on partitions`).
    static func ready(_ p: ChildProcess) -> Set<String> {
        let lines = p.log.split(separator: "\n")
        let run = lines.lastIndex { $0.contains("running on partitions") } ?? lines.startIndex
        return Set(
            lines[run...].filter { $0.contains("partition consumer ready") }.compactMap {
                $0.split(separator: "partition=").last?.split(separator: " ").first.map(String.init)
            })
    }

    /// `kill -9` of one of two instances mid-replay, NATS's consumer settings at their defaults:
    /// the other takes its partitions over, each resuming after the stream sequence last
    /// committed for it, never from what JetStream redelivers first. The alerts are exactly the
    /// replay's, nothing was refused as too late (a takeover that reordered a user's messages
    /// would), every partition's consumer is the survivor's one, with nothing left unacknowledged.
    @Test func killNineOfAnInstanceWithNATSDefaultsLosesNothingAndReordersNothing() throws {
        let records = Array(Population(users: 16, days: 40, seed: 23).traffic())
        let expected = try DurabilityTests.expectedAlerts(records)
        #expect(expected.count > 5)
        let server = try PostgresServer.shared()
        let store = try server.createDatabase()
        let database = String(store.split(separator: "/").last!)
        let nats = try NATSCluster(size: 1, partitions: 8)
        let rec = try nats.recorder(0, filters: ["mobility/v1/users/+/alerts/#"])
        let pub = try nats.recorder(0, filters: [])
        let portB = try freePort()
        let a = try Self.instance("a", nats: nats, node: 0, store: store, partitions: 8, metricsPort: try freePort())
        let b = try Self.instance("b", nats: nats, node: 0, store: store, partitions: 8, metricsPort: portB)
        defer {
            _ = a.stop(signal: SIGKILL)
            _ = b.stop(signal: SIGKILL)
        }
        let leases = { (name: String) in PartitionFailoverTests.leases(server, database, of: name) }
        #expect(eventually(timeout: 30) { leases("a") == 4 && leases("b") == 4 }, "\(a.log)\n\(b.log)")
        // Every partition's consumer made: from then on the stream keeps its messages.
        #expect(eventually(timeout: 30) { Self.ready(a).union(Self.ready(b)).count == 8 }, "\(a.log)\n\(b.log)")
        #expect(a.log.contains("the broker's JetStream settings are fit for partitioned input"), "\(a.log)")

        // Killed with messages JetStream delivered to it and it never committed: stopped first,
        // while its fetches are outstanding, so that the broker hands it the third quarter.
        let quarter = records.count / 4
        try PartitionFailoverTests.publish(records[..<(2 * quarter)], pub)
        #expect(eventually(timeout: 60) { !rec.messages().isEmpty })
        // Its current run's consumers (an earlier run's are deleted once these have acknowledged a batch).
        let lines = a.log.split(separator: "\n")
        let killedOnes = Set(
            lines[(lines.lastIndex { $0.contains("running on partitions") } ?? lines.startIndex)...].filter { $0.contains("partition consumer ready") }
                .compactMap {
                    $0.split(separator: "consumer=").last?.split(separator: " ").first.map(String.init)
                })
        // Stopped while its fetches wait on the server (a thread busy committing has none): once
        // it has caught up with the first half, its threads do nothing else; stopped again if
        // none was waiting at the moment.
        let mine = { nats.consumers(0).split(separator: "\n").filter { killedOnes.contains(String($0.split(separator: " ").dropFirst().first ?? "")) } }
        let waiting = { (line: Substring) in line.split(separator: " ").first { $0.hasPrefix("waiting=") }.flatMap { Int($0.dropFirst("waiting=".count)) } ?? 0
        }
        #expect(
            eventually(timeout: 60) {
                let m = mine(); return m.count == 4 && m.allSatisfy { $0.contains(" pending=0 ") && waiting($0) > 0 }
            },
            "the instance did not catch up: \(nats.consumers(0))")
        var stoppedWaiting = false
        for _ in 0..<10 where !stoppedWaiting {
            a.signal(SIGSTOP)
            stoppedWaiting = eventually(timeout: 0.3) { mine().contains { waiting($0) > 0 } }
            if !stoppedWaiting { a.signal(SIGCONT) }
        }
        #expect(stoppedWaiting, "no fetch of the stopped instance was waiting: \(nats.consumers(0))")
        try PartitionFailoverTests.publish(records[(2 * quarter)..<(3 * quarter)], pub)
        #expect(eventually(timeout: 10) { pub.acknowledgedCount >= 3 * quarter }, "\(pub.acknowledgedCount)")
        let stranded = nats.consumers(0)
        // The kill must strand delivered, unacknowledged messages, or redelivery is not exercised.
        let unacknowledged = stranded.split(separator: "\n").filter { killedOnes.contains(String($0.split(separator: " ").dropFirst().first ?? "")) }.map {
            line in
            line.split(separator: " ").first { $0.hasPrefix("ack_pending=") }.flatMap { Int($0.dropFirst("ack_pending=".count)) } ?? 0
        }
        #expect(
            unacknowledged.contains { $0 > 0 }, "no consumer of the killed instance (\(killedOnes.sorted())) held unacknowledged messages:\n\(stranded)")
        a.signal(SIGKILL)
        a.signal(SIGCONT)
        _ = a.wait()
        let killed = Date()
        let rest = PartitionFailoverTests.BackgroundPublish(records[(3 * quarter)...], pub)
        #expect(eventually(timeout: 20) { leases("b") == 8 }, "\(b.log)")
        let moved = Date().timeIntervalSince(killed)
        #expect(rest.finished() == nil)
        try PartitionFailoverTests.expectReplaysAlerts(
            rec, expected, store: (server, database), records: records, nats: nats, a.log + "\n" + b.log)

        let metrics = try #require(httpGet(port: portB, path: "/metrics")).body
        let m = try parsePrometheus(metrics)
        #expect(m["mobilityd_rejected_total{reason=\"too_late\"}"] == 0, "\(metrics)")
        // Nothing b's last run was handed had its user's committed state applied already (a
        // state committed ahead of its partition's recorded sequence would be skipped here), and
        // no user's committed state is ahead of its partition's sequence.
        #expect(m["mobilityd_journal_skipped_total"] == 0, "\(metrics)")
        let ahead = "SELECT count(*) FROM users u JOIN partitions p USING (partition) WHERE u.applied_seq > p.stream_seq"
        #expect(try server.psql(ahead, database: database) == "0")
        // Every partition committed through some stream sequence; each has one consumer left (b's
        // last run's), with nothing delivered and unacknowledged once b caught up.
        #expect(eventually(timeout: 10) { (try? server.psql("SELECT count(*) FROM partitions WHERE stream_seq > 0", database: database)) == "8" })
        let ours = { nats.consumers(0).split(separator: "\n").filter { $0.contains(" mobilityd-part-") } }
        // (An earlier consumer of a partition without traffic goes after 5 s of empty fetches.)
        #expect(eventually(timeout: 20) { ours().count == 8 && ours().allSatisfy { $0.contains("ack_pending=0") } }, "\(nats.consumers(0))")
        let resumed = b.log.split(separator: "\n").filter { $0.contains("partition consumer ready") }.suffix(8).joined(separator: "\n")
        print("a's consumers when killed:\n\(stranded)\nb's last consumers:\n\(resumed)")
        print(
            "jetstream intake, kill -9 of an instance: partitions moved \(String(format: "%.1f", moved)) s after; \(expected.count) alerts exact"
        )
        #expect(b.stop() == 0)
    }
}

extension PartitionStreamIntakeTests {
    /// An instance whose NATS node is lost for good (3 nodes, NATS's consumer defaults): its node
    /// answers no ping for a whole lease, it gives every lease up, and the
    /// other instance takes the partitions and resumes each after its committed stream sequence
    /// on the surviving nodes; the replay's alerts, exactly.
    @Test func anInstanceWhoseNATSNodeIsLostForGoodGivesItsPartitionsUp() throws {
        let run = try PartitionFailoverTests.TwoInstances(size: 3, client: 2, nodeA: 1, nodeB: 2, intake: .jetStream)
        defer { withExtendedLifetime(run) {} }
        let (records, nats, rec, pub, a, b) = (run.records, run.nats, run.rec, run.pub, run.a, run.b)
        let leases = run.leases
        let half = records.count / 2
        try PartitionFailoverTests.publish(records[..<half], pub)
        #expect(eventually(timeout: 60) { !rec.messages().isEmpty })
        nats.stop(1, signal: SIGKILL)
        let killed = Date()
        let rest = PartitionFailoverTests.BackgroundPublish(records[half...], pub)
        #expect(eventually(timeout: 30) { leases("b") == 8 }, "\(a.log)\n\(b.log)")
        let moved = Date().timeIntervalSince(killed)
        #expect(moved < 10, "partitions moved \(moved) s after the node's loss (--lease 2)")
        #expect(rest.finished() == nil)
        #expect(a.log.contains("giving up every lease"), "\(a.log)")
        try run.expectReplaysAlerts()
        // The survivor keeps its leases while the cluster elects leaders: its node answers.
        #expect(!b.log.contains("giving up every lease"), "\(b.log)")
        #expect(a.isRunning)  // it waits for its broker, holding nothing
        print(
            "jetstream intake, NATS node of an instance lost for good: its partitions held by the other \(String(format: "%.1f", moved)) s after the kill; the gateway connected \(pub.connectionCount) times"
        )
        #expect(b.stop() == 0, "\(b.log.suffix(20_000))")
    }
}

extension PartitionStreamIntakeTests {
    /// A paused owner (SIGSTOP past its lease) with the JetStream intake: the other instance
    /// takes its partitions (token + 1), makes their consumers anew and deletes the paused one's;
    /// on SIGCONT the old owner's fetches, commits and recorded sequences are refused (its
    /// consumers are gone, the fence), it stops that run and rejoins: the two share the 8
    /// partitions again, and the alerts are the replay's.
    @Test func aPausedOwnerIsFencedAndRejoins() throws {
        let run = try PartitionFailoverTests.TwoInstances(size: 1, client: 0, nodeA: 0, nodeB: 0, intake: .jetStream)
        defer { withExtendedLifetime(run) {} }
        let (records, rec, pub, a, b) = (run.records, run.rec, run.pub, run.a, run.b)
        let leases = run.leases
        let quarter = records.count / 4
        try PartitionFailoverTests.publish(records[..<(2 * quarter)], pub)
        #expect(eventually(timeout: 60) { !rec.messages().isEmpty })
        a.signal(SIGSTOP)
        try PartitionFailoverTests.publish(records[(2 * quarter)..<(3 * quarter)], pub)
        #expect(eventually(timeout: 20) { leases("b") == 8 }, "\(b.log)")
        #expect(eventually(timeout: 20) { Self.ready(b).count == 8 }, "\(b.log)")
        a.signal(SIGCONT)
        #expect(eventually(timeout: 10) { a.log.contains("partition leases lost") || a.log.contains("a commit was fenced") }, "\(a.log)")
        #expect(eventually(timeout: 30) { leases("a") == 4 && leases("b") == 4 }, "\(a.log)\n\(b.log)")
        try PartitionFailoverTests.publish(records[(3 * quarter)...], pub)
        try run.expectReplaysAlerts()
        #expect(a.isRunning && b.isRunning)
        #expect(a.stop() == 0)
        #expect(b.stop() == 0)
    }
}

extension PartitionStreamIntakeTests {
    /// PostgreSQL stops mid-replay for longer than the lease and comes back, with the JetStream
    /// intake: nothing is acknowledged that was not committed and recorded, the runs stop when
    /// the leases lapse, the processes wait, reclaim their shares and resume every partition after
    /// its recorded sequence; the replay's alerts.
    @Test func aPostgresRestartMidReplayIsWaitedFor() throws {
        let records = Array(Population(users: 16, days: 40, seed: 29).traffic())
        let expected = try DurabilityTests.expectedAlerts(records)
        let server = try PostgresServer()  // its own: this test stops it
        let store = try server.createDatabase()
        let database = String(store.split(separator: "/").last!)
        let nats = try NATSCluster(size: 1, partitions: 8)
        let rec = try nats.recorder(0, filters: ["mobility/v1/users/+/alerts/#"])
        let pub = try nats.recorder(0, filters: [])
        let a = try Self.instance("a", nats: nats, node: 0, store: store, partitions: 8, metricsPort: try freePort())
        let b = try Self.instance("b", nats: nats, node: 0, store: store, partitions: 8, metricsPort: try freePort())
        defer {
            _ = a.stop(signal: SIGKILL)
            _ = b.stop(signal: SIGKILL)
        }
        let leases = { (name: String) in PartitionFailoverTests.leases(server, database, of: name) }
        #expect(eventually(timeout: 30) { leases("a") == 4 && leases("b") == 4 }, "\(a.log)\n\(b.log)")
        #expect(eventually(timeout: 30) { Self.ready(a).union(Self.ready(b)).count == 8 }, "\(a.log)\n\(b.log)")
        let quarter = records.count / 4
        try PartitionFailoverTests.publish(records[..<(2 * quarter)], pub)
        #expect(eventually(timeout: 60) { !rec.messages().isEmpty })
        server.stop()
        try PartitionFailoverTests.publish(records[(2 * quarter)..<(3 * quarter)], pub)
        #expect(
            eventually(timeout: 20) { a.log.contains("partition leases expired unrenewed") && b.log.contains("partition leases expired unrenewed") },
            "\(a.log)\n\(b.log)")
        #expect(a.isRunning && b.isRunning)
        try server.start()
        #expect(eventually(timeout: 30) { leases("a") == 4 && leases("b") == 4 }, "\(a.log)\n\(b.log)")
        try PartitionFailoverTests.publish(records[(3 * quarter)...], pub)
        try PartitionFailoverTests.expectReplaysAlerts(
            rec, expected, store: (server, database), records: records, nats: nats, a.log + "\n" + b.log)
        #expect(a.isRunning && b.isRunning)
        #expect(a.stop() == 0)
        #expect(b.stop() == 0)
    }
}

extension PartitionStreamIntakeTests {
    /// Partitions never consumed from JetStream whose users carry applied sequences of an ingest
    /// journal (a single-instance PostgreSQL deployment, or the MQTT intake, before; here set
    /// in the store, far ahead of the stream's sequences, as a long-lived deployment's are) run
    /// with the JetStream intake: each partition with such users is refused, loudly, with the
    /// count and the SQL to run, never consumed with its messages skipped as applied; after the
    /// SQL, with every instance stopped, every partition is consumed and the alerts are the replay's.
    @Test func aPartitionWhoseUsersCarryJournalPositionsIsRefusedUntilReset() throws {
        let records = Array(Population(users: 16, days: 40, seed: 23).traffic())
        let expected = try DurabilityTests.expectedAlerts(records)
        let server = try PostgresServer.shared()
        let store = try server.createDatabase()
        let database = String(store.split(separator: "/").last!)
        let nats = try NATSCluster(size: 1, partitions: 8)
        let rec = try nats.recorder(0, filters: ["mobility/v1/users/+/alerts/#"])
        let pub = try nats.recorder(0, filters: [])
        let a = try Self.instance("a", nats: nats, node: 0, store: store, partitions: 8, metricsPort: try freePort())
        defer { _ = a.stop(signal: SIGKILL) }
        #expect(eventually(timeout: 30) { Self.ready(a).count == 8 }, "\(a.log)")
        let half = records.count / 2
        try PartitionFailoverTests.publish(records[..<half], pub)
        #expect(eventually(timeout: 10) { pub.acknowledgedCount >= half }, "\(pub.acknowledgedCount)")
        let ours = { nats.consumers(0).split(separator: "\n").filter { $0.contains(" mobilityd-part-") } }
        #expect(
            eventually(timeout: 60) { ours().count == 8 && ours().allSatisfy { $0.contains("ack_pending=0") && $0.contains(" pending=0 ") } },
            "\(nats.consumers(0))\n\(a.log)")
        #expect(a.stop() == 0)
        let journaled = { (try? server.psql("SELECT count(DISTINCT partition) FROM users WHERE applied_seq > 0", database: database)).flatMap { Int($0) } ?? 0 }
        #expect(journaled() > 0)
        _ = try server.psql("UPDATE partitions SET stream_seq = 0, stream_created = 0", database: database)
        _ = try server.psql("UPDATE users SET applied_seq = applied_seq + 1000000 WHERE applied_seq > 0", database: database)
        let refused = journaled()

        let b = try Self.instance("b", nats: nats, node: 0, store: store, partitions: 8, metricsPort: try freePort())
        defer { _ = b.stop(signal: SIGKILL) }
        let refusals = { b.log.split(separator: "\n").filter { $0.contains("UPDATE users SET applied_seq = 0 WHERE partition = ") } }
        #expect(eventually(timeout: 30) { refusals().count == refused && Self.ready(b).count == 8 - refused }, "\(b.log)")
        #expect(refusals().allSatisfy { $0.contains("never consumed from $MQTT_msgs but ") && $0.contains("of its users have applied input") }, "\(b.log)")
        #expect(b.stop() == 0)
        #expect(refusals().count == refused, "logged once per partition: \(b.log)")

        _ = try server.psql("UPDATE users SET applied_seq = 0 WHERE applied_seq > 0", database: database)
        let c = try Self.instance("c", nats: nats, node: 0, store: store, partitions: 8, metricsPort: try freePort())
        defer { _ = c.stop(signal: SIGKILL) }
        #expect(eventually(timeout: 30) { Self.ready(c).count == 8 }, "\(c.log)")
        #expect(!c.log.contains("UPDATE users SET applied_seq"), "\(c.log)")
        try PartitionFailoverTests.publish(records[half...], pub)
        try PartitionFailoverTests.expectReplaysAlerts(
            rec, expected, store: (server, database), records: records, nats: nats, a.log + "\n" + b.log + "\n" + c.log)
        #expect(c.stop() == 0)
    }

    /// `$MQTT_msgs` deleted and made again (the node's JetStream store wiped) and grown past the
    /// sequence a partition was committed through: the partition is refused, loudly, with the
    /// SQL to run, never consumed from that sequence on as if the stream were the same.
    @Test func aPartitionOfARecreatedStreamIsRefused() throws {
        let records = Array(Population(users: 16, days: 10, seed: 37).traffic())
        let server = try PostgresServer.shared()
        let store = try server.createDatabase()
        let database = String(store.split(separator: "/").last!)
        let nats = try NATSCluster(size: 1, partitions: 8)
        let a = try Self.instance("a", nats: nats, node: 0, store: store, partitions: 8, metricsPort: try freePort())
        defer { _ = a.stop(signal: SIGKILL) }
        #expect(eventually(timeout: 30) { Self.ready(a).count == 8 }, "\(a.log)")
        do {
            // Each publish acknowledged before the recorder closes (closing drops what is queued).
            let pub = try nats.recorder(0, filters: [])
            try PartitionFailoverTests.publish(records[...], pub)
            #expect(eventually(timeout: 30) { pub.acknowledgedCount >= records.count }, "\(pub.acknowledgedCount) of \(records.count)")
        }
        let recorded = { (try? server.psql("SELECT count(*) FROM partitions WHERE stream_seq > 0", database: database)).flatMap { Int($0) } ?? 0 }
        #expect(eventually(timeout: 60) { recorded() == 8 }, "\(a.log)")
        #expect(a.stop() == 0)

        nats.stop(0)
        try FileManager.default.removeItem(atPath: "\(nats.directory)/js0")
        try nats.start(0)
        try nats.waitReady(0)
        do {
            // Past every recorded sequence: a partition taken on from it would skip all before.
            let pub = try nats.recorder(0, filters: [])
            try PartitionFailoverTests.publish(records[...], pub)
            try PartitionFailoverTests.publish(records[...], pub)
            #expect(eventually(timeout: 30) { pub.acknowledgedCount >= 2 * records.count }, "\(pub.acknowledgedCount) of \(2 * records.count)")
        }
        let b = try Self.instance("b", nats: nats, node: 0, store: store, partitions: 8, metricsPort: try freePort())
        defer { _ = b.stop(signal: SIGKILL) }
        let refusals = { b.log.split(separator: "\n").filter { $0.contains("it was deleted and made again") } }
        #expect(eventually(timeout: 30) { refusals().count == 8 }, "\(b.log)")
        #expect(refusals().allSatisfy { $0.contains("UPDATE partitions SET stream_seq = 0, stream_created = 0 WHERE partition = ") }, "\(b.log)")
        #expect(Self.ready(b).isEmpty, "\(b.log)")
        #expect(b.stop() == 0)
    }
}

extension PartitionStreamIntakeTests {
    /// A delivery of a partition's consumer that never reaches the instance (taken here by
    /// another client fetching from the same consumer while the instance is paused, as a fetch's
    /// answer lost in a leader change would be): the instance sees its next delivery number
    /// skip, commits and acknowledges only what came before, and makes its consumer anew after
    /// the committed sequence — the missing message is consumed, not acknowledged unseen by the
    /// cumulative acknowledgement of a later one. Every sample is accepted; the replay's alerts.
    @Test func aDeliveryThatNeverArrivesIsConsumedAgainNotSkipped() throws {
        let records = Array(Population(users: 16, days: 12, seed: 41).traffic())
        let expected = try DurabilityTests.expectedAlerts(records)
        let samples = records.filter { $0.topic.hasSuffix("/samples") }.reduce(0) { n, r in
            n + (((try? JSONSerialization.jsonObject(with: Data(r.payload))) as? [Any])?.count ?? 0)
        }
        let server = try PostgresServer.shared()
        let store = try server.createDatabase()
        let database = String(store.split(separator: "/").last!)
        let nats = try NATSCluster(size: 1, partitions: 8)
        let rec = try nats.recorder(0, filters: ["mobility/v1/users/+/alerts/#"])
        let pub = try nats.recorder(0, filters: [])
        let port = try freePort()
        let a = try Self.instance("a", nats: nats, node: 0, store: store, partitions: 8, metricsPort: port)
        defer {
            a.signal(SIGCONT)
            _ = a.stop(signal: SIGKILL)
        }
        #expect(eventually(timeout: 30) { Self.ready(a).count == 8 }, "\(a.log)")
        let half = records.count / 2
        try PartitionFailoverTests.publish(records[..<half], pub)
        let recorded = { (try? server.psql("SELECT count(*) FROM partitions WHERE stream_seq > 0", database: database)).flatMap { Int($0) } ?? 0 }
        #expect(eventually(timeout: 60) { recorded() == 8 }, "\(a.log)")

        // Paused, its fetches lapse; the second half waits in the stream, and one delivery of
        // partition k's consumer goes to another client.
        a.signal(SIGSTOP)
        let user = try #require(records.last?.topic.split(separator: "/").dropLast().last.map(String.init))
        let k = PartitionSet(count: 8, owned: [0]).partition(of: user)
        let line = try #require(a.log.split(separator: "\n").last { $0.contains("partition consumer ready") && $0.contains("partition=\(k) ") })
        let name = try #require(line.split(separator: "consumer=").last?.split(separator: " ").first.map(String.init))
        let connection = try NATSConnection(
            urls: [nats.nodes[0].natsURL], username: "mobilityd", password: nats.password, caFile: nats.caFile, certFile: nil, keyFile: nil)
        let thief = try JetStreamPullConsumer(
            connection: connection, stream: "$MQTT_msgs", name: name, filter: "$MQTT.msgs.part.\(k).mobility.v1.users.*.*", startSequence: 0)
        #expect(!thief.created)
        // The paused instance's last fetch lapsed (else it would be handed the messages first).
        #expect(eventually(timeout: 10) { (try? thief.position())?.waitingFetches == 0 })
        try PartitionFailoverTests.publish(records[half...], pub)
        var stolen: [JetStreamPullConsumer.Message] = []
        #expect(
            eventually(timeout: 20) {
                stolen = (try? thief.fetch(max: 1, timeoutMs: 500)) ?? []
                return !stolen.isEmpty
            })
        a.signal(SIGCONT)

        #expect(eventually(timeout: 30) { a.log.contains("skipped deliveries; opening it again") }, "\(a.log)")
        try PartitionFailoverTests.expectReplaysAlerts(rec, expected, store: (server, database), records: records, nats: nats, a.log)
        let accepted = { (try? parsePrometheus(httpGet(port: port, path: "/metrics")?.body ?? ""))?["mobilityd_samples_accepted_total"] ?? -1 }
        #expect(
            eventually(timeout: 30) { accepted() == Double(samples) },
            "accepted \(accepted()) of \(samples) samples; stolen delivery \(stolen.first?.delivery ?? 0) at sequence \(stolen.first?.sequence ?? 0)")
        // The intake's metrics: the consumer made anew for the skipped delivery, and each
        // partition's committed stream sequence as the store has it.
        let metrics = try #require(httpGet(port: port, path: "/metrics")).body
        let m = try parsePrometheus(metrics)
        #expect((m["mobilityd_jetstream_consumers_remade_total{reason=\"deliveries_skipped\"}"] ?? 0) >= 1, "\(metrics)")
        #expect((m["mobilityd_jetstream_consumers_made_total"] ?? 0) >= 9, "\(metrics)")
        #expect((m["mobilityd_jetstream_messages_total"] ?? 0) > 0 && (m["mobilityd_jetstream_batches_total"] ?? 0) > 0, "\(metrics)")
        // The last samples are accepted up to a commit interval before their commit: once it is
        // made, each partition's metric is the sequence the store has.
        var unequal = "not read"
        #expect(
            eventually(timeout: 10) {
                guard let body = httpGet(port: port, path: "/metrics")?.body, let now = try? parsePrometheus(body),
                    let stored = try? server.psql("SELECT partition, stream_seq FROM partitions ORDER BY partition", database: database)
                        .split(separator: "\n"), stored.count == 8
                else { return false }
                unequal = stored.filter { row in
                    let f = row.split(separator: "|")
                    return now["mobilityd_partition_stream_sequence{partition=\"\(f[0])\"}"] != Double(f[1])
                        || (now["mobilityd_partition_progress_age_seconds{partition=\"\(f[0])\"}"] ?? -1) < 0
                }.joined(separator: ", ")
                return unequal.isEmpty
            }, "metric against store differs for \(unequal)")
        #expect(a.stop() == 0)
    }
}

extension PartitionStreamIntakeTests {
    /// `kill -9` of the NATS node an instance consumes through, mid-replay (3 nodes, NATS's
    /// consumer defaults), and its restart once the rest is stored: the instance gives its
    /// leases up while its node does not answer, the other consumes every partition meanwhile,
    /// and when the node is back the instance rejoins and takes its share again, each partition
    /// resuming after its committed sequence. The replay's alerts, exactly.
    @Test func anInstancesNATSNodeKilledAndRestartedLosesNothing() throws {
        let run = try PartitionFailoverTests.TwoInstances(size: 3, client: 2, nodeA: 1, nodeB: 2, intake: .jetStream)
        defer { withExtendedLifetime(run) {} }
        let (records, nats, rec, pub, a, b) = (run.records, run.nats, run.rec, run.pub, run.a, run.b)
        let leases = run.leases
        let half = records.count / 2
        try PartitionFailoverTests.publish(records[..<half], pub)
        #expect(eventually(timeout: 60) { !rec.messages().isEmpty })
        nats.stop(1, signal: SIGKILL)
        try PartitionFailoverTests.publish(records[half...], pub)
        #expect(eventually(timeout: 30) { leases("b") == 8 }, "\(a.log)\n\(b.log)")
        #expect(eventually(timeout: 60) { pub.acknowledgedCount >= records.count }, "\(pub.acknowledgedCount) of \(records.count) acknowledged")
        try nats.start(1)
        let restarted = Date()
        #expect(eventually(timeout: 60) { leases("a") == 4 && leases("b") == 4 && Self.ready(a).count == 4 }, "\(a.log)\n\(b.log)")
        let back = Date().timeIntervalSince(restarted)
        try run.expectReplaysAlerts()
        print(
            "jetstream intake, NATS node of an instance killed and restarted: 4/4 again, consuming, \(String(format: "%.1f", back)) s after the node's restart")
        #expect(a.stop() == 0, "\(a.log.suffix(20_000))")
        #expect(b.stop() == 0, "\(b.log.suffix(20_000))")
    }
}

extension PartitionStreamIntakeTests {
    /// An earlier run's consumers go while traffic flows: the next run's consumer of each
    /// partition deletes the partition's older ones (which keep the stream's messages too) once
    /// the server has its acknowledgement of an earlier batch, without waiting for the partition
    /// to fall idle. Every partition gets messages in every 100 ms step of the traffic, and the
    /// longest wait between two messages of a partition is measured to be under 5 s, so the idle
    /// check (after 5 s of empty fetches) cannot have run.
    @Test func anEarlierRunsConsumersAreDeletedWhileTrafficFlows() throws {
        let population = Array(Population(users: 24, days: 60, seed: 31).traffic())
        // The partitions' messages taken in turn (each user's in its order: a user is in one
        // partition), so that every step of the traffic has some of each.
        let partitions = PartitionSet(count: 4, owned: [0, 1, 2, 3])
        let partition = { (r: TrafficRecord) in partitions.partition(of: String(r.topic.split(separator: "/")[3])) }
        var queues = (0..<4).map { k in ArraySlice(population.filter { partition($0) == k }) }
        try #require(queues.allSatisfy { !$0.isEmpty }, "a partition without users")
        var records: [TrafficRecord] = []
        while let k = queues.indices.first(where: { !queues[$0].isEmpty }) {
            for q in k..<4 where !queues[q].isEmpty { records.append(queues[q].removeFirst()) }
        }
        let backlog = records.count / 10
        let chunk = max(8, (records.count - backlog) / 300)  // every 100 ms: 30 s of traffic
        let server = try PostgresServer.shared()
        let store = try server.createDatabase()
        let nats = try NATSCluster(size: 1, partitions: 4)
        let pub = try nats.recorder(0, filters: [])
        let names = { (p: ChildProcess) in
            Set(
                p.log.split(separator: "\n").filter { $0.contains("partition consumer ready") }.compactMap {
                    $0.split(separator: "consumer=").last?.split(separator: " ").first.map(String.init)
                })
        }
        // The partitions' consumers on the node; nil when its monitor does not answer.
        let ours = { () -> Set<String>? in
            let listed = nats.consumers(0)
            guard listed.hasPrefix("stream ") else { return nil }
            return Set(
                listed.split(separator: "\n").compactMap { $0.split(separator: " ").dropFirst().first.map(String.init) }.filter {
                    $0.hasPrefix("mobilityd-part-")
                })
        }

        let first = try Self.instance("a", nats: nats, node: 0, store: store, partitions: 4, metricsPort: try freePort())
        defer { _ = first.stop(signal: SIGKILL) }
        #expect(eventually(timeout: 30) { Self.ready(first).count == 4 }, "\(first.log)")
        let earlier = names(first)
        #expect(first.stop() == 0, "\(first.log)")
        #expect(earlier.count == 4 && ours() == earlier, "\(nats.consumers(0))")  // kept for the next owner

        // A backlog waiting, so that the next run's consumers have messages from their first fetch.
        try PartitionFailoverTests.publish(records[..<backlog], pub)
        let second = try Self.instance("b", nats: nats, node: 0, store: store, partitions: 4, metricsPort: try freePort())
        defer { _ = second.stop(signal: SIGKILL) }
        var next = backlog
        var gone = false
        var sent = [Date](repeating: Date(), count: 4)
        var longestWait = 0.0
        while !gone, next < records.count {
            let end = min(next + chunk, records.count)
            try PartitionFailoverTests.publish(records[next..<end], pub)
            for k in Set(records[next..<end].map(partition)) {
                longestWait = max(longestWait, Date().timeIntervalSince(sent[k]))
                sent[k] = Date()
            }
            next = end
            usleep(100_000)  // the traffic's pace
            gone = ours()?.isDisjoint(with: earlier) == true
        }
        #expect(gone, "the earlier run's consumers \(earlier.sorted()) outlived its successor's traffic:\n\(nats.consumers(0))\n\(second.log)")
        #expect(longestWait < 5, "a partition went \(longestWait) s without a message: the idle check may have deleted the consumers")
        let now = ours() ?? []
        #expect(now.count == 4 && now.isSubset(of: names(second)), "\(nats.consumers(0))")
        print("jetstream intake: an earlier run's 4 consumers deleted after \(next - backlog) of \(records.count - backlog) paced messages")
        #expect(second.stop() == 0, "\(second.log.suffix(20_000))")
    }
}

extension PartitionStreamIntakeTests {
    /// A frozen NATS node (SIGSTOP: the connection stays open and nothing answers it) under an
    /// instance given every node: its pings go unanswered, libnats leaves the node for the next
    /// one within the lease (10 s, the default), and the instance keeps its partitions and
    /// consumes on — every message of the second half, published through another node, taken
    /// in; the log says the node stopped answering and which node answers again. (With libnats's
    /// own ping interval, 2 minutes, the connection would stay on the frozen node and the
    /// instance give its leases up after the lease, with no other instance to take them.)
    @Test func anInstanceWhoseNATSNodeFreezesMovesToAnotherAndKeepsItsPartitions() throws {
        let records = Array(Population(users: 16, days: 40, seed: 23).traffic())
        let server = try PostgresServer.shared()
        let store = try server.createDatabase()
        let nats = try NATSCluster(size: 3, partitions: 4)
        defer { nats.signal(0, SIGCONT) }
        let pub = try nats.recorder(2, filters: [])
        let port = try freePort()
        let a = try Self.instance("a", nats: nats, node: 0, store: store, partitions: 4, metricsPort: port, lease: 10, everyNode: true)
        defer { _ = a.stop(signal: SIGKILL) }
        #expect(eventually(timeout: 30) { Self.ready(a).count == 4 }, "\(a.log)")
        let taken = { (try? parsePrometheus(httpGet(port: port, path: "/metrics")?.body ?? ""))?["mobilityd_jetstream_messages_total"] ?? -1 }
        let half = records.count / 2
        try PartitionFailoverTests.publish(records[..<half], pub)
        #expect(eventually(timeout: 60) { taken() == Double(half) }, "\(taken()) of \(half) messages taken\n\(a.log)")
        nats.signal(0, SIGSTOP)
        let frozen = Date()
        try PartitionFailoverTests.publish(records[half...], pub)
        #expect(eventually(timeout: 90) { taken() == Double(records.count) }, "\(taken()) of \(records.count) messages taken\n\(a.log)")
        let caughtUp = Date().timeIntervalSince(frozen)
        #expect(!a.log.contains("giving up every lease"), "\(a.log)")
        #expect(a.log.contains("the NATS node does not answer"), "\(a.log)")
        #expect(a.log.contains("the NATS connection reconnected"), "\(a.log)")
        let moved = a.log.split(separator: "\n").first { $0.contains("the NATS node answers again") }
        #expect(moved.map { !$0.contains(nats.nodes[0].natsURL) && $0.contains("nats=tls://") } == true, "\(a.log)")
        print(
            "jetstream intake, the instance's NATS node frozen: \(moved ?? "never answered again"); every message taken \(String(format: "%.1f", caughtUp)) s after the freeze"
        )
        nats.signal(0, SIGCONT)
        #expect(a.stop() == 0, "\(a.log.suffix(20_000))")
    }
}
