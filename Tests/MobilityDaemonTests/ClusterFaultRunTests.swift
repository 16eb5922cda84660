import Foundation
import Glibc
import Ingest
import Simulator
import TestSupport
import Testing

/// The fault run of a partitioned deployment on the JetStream intake, as docs/scaling.md ships it:
/// three `mobilityd --intake jetstream` on a three-node NATS cluster (`stream_replicas: 3`,
/// every consumer setting NATS's default), a durable PostgreSQL of its own, and a gateway on
/// every node publishing its users' traffic and re-sending what mobilityd's acknowledgements do
/// not cover (docs/mqtt-api.md). Mid-traffic: `kill -9` of an instance, a SIGHUP of another,
/// `kill -9` of a live instance's NATS node (with its return, or lost for good and its gateway
/// moved to another node; the instance, given every node, moves to another and keeps its
/// partitions), PostgreSQL stopped until the leases lapse and started again. The
/// alerts are exactly the replay's, every user's last samples are acknowledged, and no partition
/// goes without progress for longer than the lease + 5 s outside the database's outage.
///
/// The cohort is small here; `scripts/fault-run.sh` runs the same test repeatedly on a larger one
/// (`MW_FAULT_USERS`, `MW_FAULT_DAYS`, `MW_FAULT_SEED`).
@Suite(.serialized) struct ClusterFaultRunTests {
    static let lease = 2.0
    /// How long the gateways take to publish the cohort.
    static let seconds = Double(ProcessInfo.processInfo.environment["MW_FAULT_SECONDS"] ?? "") ?? 30

    /// The cohort: 20-sample messages, as batching phones send them.
    static func cohort() -> [TrafficRecord] {
        let env = ProcessInfo.processInfo.environment
        var p = Population(
            users: Int(env["MW_FAULT_USERS"] ?? "") ?? 24, days: Int(env["MW_FAULT_DAYS"] ?? "") ?? 45,
            seed: UInt64(env["MW_FAULT_SEED"] ?? "") ?? 31)
        p.samplesPerMessage = 20
        return Array(p.traffic())
    }

    @Test(arguments: [true, false]) func threeInstancesOnThreeNodesLoseNothing(nodeReturns: Bool) throws {
        let records = Self.cohort()
        let expected = try DurabilityTests.expectedAlerts(records)
        #expect(expected.count >= 10)
        let server = try PostgresServer(durable: true)  // its own: the run restarts it
        let store = try server.createDatabase()
        let database = String(store.split(separator: "/").last!)
        let nats = try NATSCluster(size: 3, partitions: 8)
        // Node 0 is never killed: the alerts and acknowledgements are read there.
        let rec = try nats.recorder(0, filters: ["mobility/v1/users/+/alerts/#"])
        let acks = try GatewayAcks(nats.recorder(0, filters: ["mobility/v1/users/+/acks"]), records)
        let gateways = try (0..<3).map { try nats.recorder($0, filters: []) }
        let names = ["a", "b", "c"]
        let instances = try names.indices.map {
            try PartitionStreamIntakeTests.instance(
                names[$0], nats: nats, node: $0, store: store, partitions: 8, metricsPort: try freePort(), everyNode: true)
        }
        let (a, c) = (instances[0], instances[2])
        defer { for p in instances { _ = p.stop(signal: SIGKILL) } }
        let logs = { instances.map { "\($0.log.suffix(60_000))" }.joined(separator: "\n") }
        let leases = { (name: String) in PartitionFailoverTests.leases(server, database, of: name) }
        #expect(eventually(timeout: 60) { names.map(leases).reduce(0, +) == 8 && names.allSatisfy { leases($0) >= 2 } }, "\(logs())")
        #expect(
            eventually(timeout: 60) { instances.reduce(Set<String>()) { $0.union(PartitionStreamIntakeTests.ready($1)) }.count == 8 }, "\(logs())")
        let progress = StreamProgress(server: server, database: database)
        defer { progress.stop() }

        // The gateways publish at an even pace through the faults, each user's traffic on the
        // gateway of the node its index falls on; a gateway whose node is down holds its users'
        // messages and, connected again, first re-sends what the acknowledgements do not cover.
        let users = Array(Set(records.map(Self.user))).sorted()
        let gatewayOf = Dictionary(uniqueKeysWithValues: users.enumerated().map { ($1, $0 % 3) })
        let traffic = PacedGateways(gateways, records: records, gatewayOf: gatewayOf, acks: acks, seconds: Self.seconds)
        defer { traffic.stop() }
        let at = { (fraction: Double) in { traffic.published >= Int(Double(records.count) * fraction) } }
        #expect(eventually(timeout: 600, at(0.25)))
        c.signal(SIGKILL)
        _ = c.wait()
        let instanceKilled = Date()
        #expect(eventually(timeout: 600, at(0.4)))
        a.signal(SIGHUP)
        #expect(eventually(timeout: 600, at(0.6)))
        #expect(eventually(timeout: 30) { leases("a") + leases("b") == 8 }, "\(logs())")
        nats.stop(1, signal: SIGKILL)
        let nodeKilled = Date()
        var nodeBack: Date?
        if !nodeReturns {
            // The gateway moves to a node left (which answers a connection once the cluster has elected its leaders again).
            var moved: MQTTRecorder?
            #expect(
                eventually(timeout: 60) {
                    moved = try? nats.recorder(2, filters: []); return moved != nil
                })
            traffic.move(1, to: try #require(moved))
        }
        // The instance on the lost node moves to another (its MQTT clients and its NATS
        // connection take every node, its own first) and keeps its partitions.
        let b = instances[1]
        #expect(
            eventually(timeout: 30) {
                b.log.split(separator: "\n").contains {
                    $0.contains("broker connected") && $0.contains("role=publisher") && !$0.hasSuffix("broker=\(nats.nodes[1].url)")
                }
            }, "\(logs())")
        if nodeReturns {
            try nats.start(1)
            nodeBack = Date()
        }
        #expect(eventually(timeout: 600, at(0.8)))
        // Down until the leases have lapsed: four failed heartbeats of the instance on node 0
        // (one every lease / 3), whether or not a run was under way to stop.
        let failedBeats = { PartitionFailoverTests.lines(a, "partition heartbeat failed") }
        let beatsBefore = failedBeats()
        let outage = Date()
        server.stop()
        #expect(eventually(timeout: 30) { failedBeats() >= beatsBefore + 4 }, "\(logs())")
        try server.start()
        let live = ["a", "b"]
        #expect(eventually(timeout: 60) { live.map(leases).reduce(0, +) == 8 }, "\(logs())")
        let outageEnd = Date()
        #expect(traffic.wait(timeout: Self.seconds + 300), "the gateways did not publish the cohort")
        // Progress is measured while there is traffic: up to the backlog's end, before any re-send
        // (a partition caught up waits for traffic, and is not stalled).
        acks.settle()
        progress.stop()

        // The gateways re-send what is not acknowledged once the acknowledgements stop advancing,
        // backing off as docs/mqtt-api.md asks (3 s without progress, doubling up to 48 s).
        var rounds = 0
        while !acks.complete && rounds < 8 {
            acks.settle(quiet: 3 * Double(1 << min(rounds, 4)))
            guard !acks.complete else { break }
            rounds += 1
            for r in acks.uncovered() { traffic.publish(r) }
        }
        #expect(acks.complete, "users whose last samples were never acknowledged: \(acks.incomplete)\n\(logs())")
        try PartitionFailoverTests.expectReplaysAlerts(rec, expected, timeout: 120, store: (server, database), records: records, nats: nats, logs())
        // Stalls that begin before the node's loss (the instance's crash, the SIGHUP) and those that
        // begin with it: a raft group whose leader was on the lost node elects another after 4-9 s
        // (nats-server's election timeout), and a consumer made meanwhile is asked for again every
        // 2 s until the election ends, so a partition waits that long whoever owns it.
        let lossFrom = nodeKilled.addingTimeInterval(-1)
        let before = progress.longestStall(startingIn: progress.began..<lossFrom, excluding: outage...outageEnd)
        let loss = progress.longestStall(startingIn: lossFrom..<outage, excluding: outage...outageEnd)
        let t = { (d: Date) in String(format: "%.1f", d.timeIntervalSince(progress.began)) }
        let f = { (s: (partition: Int, seconds: Double, from: Double)) in
            "\(String(format: "%.1f", s.seconds)) s (partition \(s.partition) from \(String(format: "%.1f", s.from)) s)"
        }
        print(
            "cluster fault run (node \(nodeReturns ? "returns" : "lost for good")): \(records.count) messages, \(expected.count) alerts expected, "
                + "\(rounds) re-send rounds; a partition's longest stall before the node's loss \(f(before)), from it \(f(loss)); "
                + "instance killed at \(t(instanceKilled)) s, node killed at \(t(nodeKilled)) s\(nodeBack.map { ", back at \(t($0)) s" } ?? ""), "
                + "database stopped at \(t(outage)) s, leases held again at \(t(outageEnd)) s")
        #expect(
            before.seconds <= Self.lease + 5,
            "partition \(before.partition) made no progress for \(before.seconds) s from \(before.from) s; the instances' partition lines:\n\(Self.timeline(names, instances))"
        )
        #expect(
            loss.seconds <= Self.lease + 30,
            "partition \(loss.partition) made no progress for \(loss.seconds) s from \(loss.from) s; the instances' partition lines:\n\(Self.timeline(names, instances))"
        )
        // Time for a crashing instance's backtraces; its whole log kept where the fault run asks.
        #expect(PartitionFailoverTests.lines(b, "giving up every lease") == 0, "\(b.log.suffix(20_000))")
        // Both left hold every partition between them, b some. Waited for, not sampled: a
        // heartbeat late by more than two thirds of the lease on a loaded machine loses that lease
        // and the instance claims it again on its next one (the sum is 7 meanwhile). Both counts
        // from one statement, so that a lease moving between them is neither counted twice nor missed.
        let held = { () -> (Int, Int) in
            let sql =
                "SELECT count(*) FILTER (WHERE owner LIKE 'a@%'), count(*) FILTER (WHERE owner LIKE 'b@%') FROM partitions WHERE lease_until > now()"
            let counts = ((try? server.psql(sql, database: database)) ?? "").split(separator: "|").compactMap { Int($0) }
            return counts.count == 2 ? (counts[0], counts[1]) : (-1, -1)
        }
        #expect(
            eventually(timeout: 4 * Self.lease) {
                let (ha, hb) = held(); return ha + hb == 8 && hb > 0
            },
            "leases held (a, b): \(held()); the instances' partition lines:\n\(Self.timeline(names, instances))")
        for (name, p) in zip(names, instances) where name != "c" {
            let code = p.stop(timeout: 30)
            #expect(code == 0, "\(p.log.suffix(20_000))")
        }
        // Every instance's whole log where the fault run asks (it keeps them when a run fails).
        if let dir = ProcessInfo.processInfo.environment["MW_FAULT_LOGS"] {
            let seed = ProcessInfo.processInfo.environment["MW_FAULT_SEED"] ?? "31"
            for (name, p) in zip(names, instances) {
                let file = "\(dir)/seed-\(seed)-node-\(nodeReturns ? "returns" : "lost")-instance-\(name).log"
                try? p.log.write(toFile: file, atomically: true, encoding: .utf8)
            }
        }
    }

    /// The instances' lines about partitions and leases, each prefixed by its instance's name, in time order.
    static func timeline(_ names: [String], _ instances: [ChildProcess]) -> String {
        let keys = [
            "claimed", "released", "running on", "consumer ready", "lease", "rejoin", "answers", "cut off", "store", "SIGHUP", "reload", "cannot open",
            "consumer lost", "JetStream", "restored", "broker connected"
        ]
        var lines: [String] = []
        for (n, p) in zip(names, instances) {
            lines += p.log.split(separator: "\n").filter { l in keys.contains { l.contains($0) } }.map {
                "\($0.prefix(34)) \(n) \($0.dropFirst(34).prefix(220))"
            }
        }
        return lines.sorted().joined(separator: "\n")
    }

    static func user(_ r: TrafficRecord) -> String { String(r.topic.split(separator: "/")[3]) }
}

/// Gateways publishing a cohort at an even pace, each on a thread of its own with its users'
/// records, as docs/mqtt-api.md describes a gateway: a user's messages in order; while its
/// connection is down it holds them, and once connected again (to its node back, or to another)
/// it first re-sends what the acknowledgements do not cover yet, in order.
/// (`@unchecked Sendable`: every mutable property is read and written under `lock`.)
final class PacedGateways: @unchecked Sendable {
    private let lock = NSLock()
    private var stopped = false
    private var gateways: [MQTTRecorder]
    private let gatewayOf: [String: Int]
    private var counts: [Int]
    private let done = DispatchSemaphore(value: 0)
    private let acks: GatewayAcks
    private let records: [TrafficRecord]

    init(_ gateways: [MQTTRecorder], records: [TrafficRecord], gatewayOf: [String: Int], acks: GatewayAcks, seconds: Double) {
        self.gateways = gateways
        self.gatewayOf = gatewayOf
        self.acks = acks
        self.records = records
        counts = Array(repeating: 0, count: gateways.count)
        let start = Date()
        for g in gateways.indices {
            let mine = records.indices.filter { gatewayOf[ClusterFaultRunTests.user(records[$0])] == g }
            Thread { [self] in
                var seen = (recorder: ObjectIdentifier(lock.withLock { self.gateways[g] }), connections: 1)
                for (n, i) in mine.enumerated() {
                    let wait = start.addingTimeInterval(seconds * Double(i) / Double(records.count)).timeIntervalSinceNow
                    if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
                    while !lock.withLock({ stopped }) {
                        let r = lock.withLock { self.gateways[g] }
                        let now = (ObjectIdentifier(r), r.connectionCount)
                        if now != seen {
                            // Connected again: what is not covered, up to here, first.
                            for j in acks.uncovered(before: i, gateway: g, gatewayOf: gatewayOf) {
                                try? r.publish(records[j].topic, String(decoding: records[j].payload, as: UTF8.self))
                            }
                            seen = now
                        }
                        if r.isConnected, (try? r.publish(records[i].topic, String(decoding: records[i].payload, as: UTF8.self))) != nil { break }
                        usleep(20_000)
                    }
                    lock.withLock { counts[g] = n + 1 }
                }
                done.signal()
            }.start()
        }
    }

    /// Records published so far.
    var published: Int { lock.withLock { counts.reduce(0, +) } }

    /// Publishes `r` on its user's gateway now (a re-send); dropped while that gateway is disconnected.
    func publish(_ r: TrafficRecord) {
        let g = lock.withLock { gateways[gatewayOf[ClusterFaultRunTests.user(r)]!] }
        try? g.publish(r.topic, String(decoding: r.payload, as: UTF8.self))
    }

    /// Gateway `i` connects elsewhere.
    func move(_ i: Int, to recorder: MQTTRecorder) { lock.withLock { gateways[i] = recorder } }

    /// Waits until the whole cohort is published; false if it was not within `timeout` seconds.
    func wait(timeout: Double) -> Bool {
        let deadline = DispatchTime.now() + timeout
        return (0..<lock.withLock { gateways.count }).allSatisfy { _ in done.wait(timeout: deadline) == .success }
    }

    /// Ends the gateways' threads (one waiting for its connection gives up).
    func stop() { lock.withLock { stopped = true } }
}

/// A gateway's half of the acknowledgement protocol for the whole cohort (docs/mqtt-api.md): each
/// user's messages in order, and how far the retained `users/{user}/acks` cover them.
final class GatewayAcks: Sendable {
    let recorder: MQTTRecorder
    let records: [TrafficRecord]
    /// user → record indices in order; sample id → position among them; the last samples message's position.
    let perUser: [String: [Int]]
    let position: [String: [String: Int]]
    let lastSamples: [String: Int]

    init(_ recorder: MQTTRecorder, _ records: [TrafficRecord]) throws {
        self.recorder = recorder
        self.records = records
        var perUser: [String: [Int]] = [:]
        var position: [String: [String: Int]] = [:]
        var lastSamples: [String: Int] = [:]
        for (i, r) in records.enumerated() {
            let user = ClusterFaultRunTests.user(r)
            let pos = perUser[user, default: []].count
            perUser[user, default: []].append(i)
            guard r.topic.hasSuffix("/samples") else { continue }
            let v = try JSONSerialization.jsonObject(with: Data(r.payload))
            for s in (v as? [[String: Any]]) ?? [v as? [String: Any] ?? [:]] { if let id = s["id"] as? String { position[user, default: [:]][id] = pos } }
            lastSamples[user] = pos
        }
        (self.perUser, self.position, self.lastSamples) = (perUser, position, lastSamples)
    }

    /// Each user's covered position: the furthest sample an acknowledgement of it named.
    var covered: [String: Int] {
        var out: [String: Int] = [:]
        for m in recorder.messages() {
            guard let o = (try? JSONSerialization.jsonObject(with: Data(m.payload))) as? [String: Any], let user = o["user"] as? String,
                let id = o["lastId"] as? String, let pos = position[user]?[id]
            else { continue }
            out[user] = max(out[user] ?? -1, pos)
        }
        return out
    }

    var incomplete: [String] {
        let c = covered
        return lastSamples.filter { (c[$0.key] ?? -1) < $0.value }.map(\.key).sorted()
    }

    var complete: Bool { incomplete.isEmpty }

    /// Waits until every user is covered or the acknowledgements stopped advancing for `quiet` seconds.
    func settle(quiet: Double = 3) {
        var last = -1
        var since = Date()
        while !complete && Date().timeIntervalSince(since) < quiet {
            let n = recorder.messages().count
            if n != last { (last, since) = (n, Date()) }
            usleep(100_000)
        }
    }

    /// Gateway `g`'s records before `index` not covered yet, in order.
    func uncovered(before index: Int, gateway g: Int, gatewayOf: [String: Int]) -> [Int] {
        let c = covered
        var out: [Int] = []
        for (user, list) in perUser where gatewayOf[user] == g { out += list.dropFirst((c[user] ?? -1) + 1).prefix { $0 < index } }
        return out.sorted()
    }

    /// The messages after each incomplete user's covered position, in order.
    func uncovered() -> [TrafficRecord] {
        let c = covered
        var out: [Int] = []
        for user in incomplete { out += perUser[user]!.dropFirst((c[user] ?? -1) + 1) }
        return out.sorted().map { records[$0] }
    }
}

/// Each partition's committed stream sequence, read from the store every 100 ms, and when it last
/// advanced: the longest time a partition went without progress.
final class StreamProgress: @unchecked Sendable {
    let began = Date()
    private let lock = NSLock()
    private var samples: [(at: Date, seqs: [Int: Int])] = []
    private var running = true
    private var thread: Thread?

    init(server: PostgresServer, database: String) {
        let t = Thread { [weak self] in
            while let self, self.lock.withLock({ self.running }) {
                if let text = try? server.psql("SELECT partition || ' ' || stream_seq FROM partitions", database: database) {
                    var seqs: [Int: Int] = [:]
                    for line in text.split(separator: "\n") {
                        let f = line.split(separator: " ")
                        if f.count == 2, let k = Int(f[0]), let s = Int(f[1]) { seqs[k] = s }
                    }
                    self.lock.withLock { self.samples.append((Date(), seqs)) }
                }
                usleep(100_000)
            }
        }
        thread = t
        t.start()
    }

    func stop() { lock.withLock { running = false } }

    /// The longest interval between two advances of one partition's sequence (up to its last
    /// advance: a partition whose traffic ended is not stalled) that begins in `window`, not
    /// counting intervals that overlap `excluded`.
    func longestStall(startingIn window: Range<Date>, excluding excluded: ClosedRange<Date>) -> (partition: Int, seconds: Double, from: Double) {
        let s = lock.withLock { samples }
        var last: [Int: (seq: Int, at: Date)] = [:]
        var worst = (partition: -1, seconds: 0.0, from: 0.0)
        for (at, seqs) in s {
            for (k, seq) in seqs {
                guard let prev = last[k] else {
                    last[k] = (seq, at)
                    continue
                }
                guard seq != prev.seq else { continue }
                let gap = at.timeIntervalSince(prev.at)
                if window.contains(prev.at), !(prev.at...at).overlaps(excluded), gap > worst.seconds { worst = (k, gap, prev.at.timeIntervalSince(began)) }
                last[k] = (seq, at)
            }
        }
        return worst
    }
}
