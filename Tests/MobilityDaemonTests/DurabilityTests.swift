import Foundation
import Glibc
import Ingest
import MobilityModel
import RuleEngine
import RuleLanguage
import Simulator
import TestSupport
import Testing

/// Durable state end to end: restarts and crashes of mobilityd against a real mosquitto.
@Suite(.serialized) struct DurabilityTests {
    static func expectedAlerts(_ records: [TrafficRecord]) throws -> [String] {
        let program = try #require(Checker.check(RuleSet.load([RepoPaths.rules]).sources).program)
        return ScenarioVerifier.replay(records, program: program).map(\.json).sorted()
    }

    @Test func cleanRestartNeitherForgetsNorRefires() throws {
        let scenario = try Scenario.load(RepoPaths.root + "/simulator/scenarios/jamie-plateau.scenario")
        let records = ScenarioVerifier.traffic([scenario])
        let expected = try Self.expectedAlerts(records)
        #expect(expected.count >= 2)
        let broker = try MosquittoBroker()
        let state = TemporaryPath.make("mw-state")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/alerts/#"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        // First run: up to day ~70 (the stall has fired), then a clean stop.
        let cut = records.count * 70 / 90
        var daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false"])
        for r in records[..<cut] { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
        #expect(daemon.waitProcessed(cut, timeout: 60))
        #expect(daemon.process.stop() == 0)
        let firstRun = rec.messages().filter { !$0.payload.isEmpty }.count
        #expect(firstRun >= 1)
        // Second run on the same state: the baseline and the firing alert are remembered.
        daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false"])
        #expect(daemon.process.log.contains("users=1"))
        for r in records[cut...] { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
        #expect(daemon.waitProcessed(records.count - cut, timeout: 60))
        #expect(eventually { rec.messages().filter { !$0.payload.isEmpty }.count >= expected.count })
        #expect(daemon.waitIdle())
        #expect(try rec.barrier())  // nothing more arrives
        #expect(rec.messages().filter { !$0.payload.isEmpty }.map(\.text).sorted() == expected)
    }

    @Test(arguments: [false, true]) func killNineAtRandomMomentsLosesNothingAndInventsNothing(syncs: Bool) throws {
        var population = Population(users: 30, days: 45, seed: 5)
        // Phones syncing 3 days in 50-sample messages: payloads of several KB, which the daemon
        // decodes on its decode stage, so kills also land while messages sit in the stage.
        if syncs { (population.samplesPerMessage, population.syncDays) = (50, 3) }
        let records = Array(population.traffic())
        if syncs { #expect(records.filter { $0.payload.count >= 2048 }.count * 2 > records.count) }
        let expected = try Self.expectedAlerts(records)
        #expect(expected.count > 10)
        let broker = try MosquittoBroker()
        let state = TemporaryPath.make("mw-state")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/alerts/#"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        var rng = SplitMix64(seed: 77)
        var daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false"])
        let chunk = syncs ? max(records.count / 12, 1) : 1000
        var kills = 0
        var next = 0
        var replayedRecords = 0
        while next < records.count {
            for r in records[next..<min(next + chunk, records.count)] { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
            next += chunk
            if kills < 4, Bool.random(using: &rng) || next >= records.count - chunk {
                usleep(UInt32.random(in: 0...150_000, using: &rng))  // a random moment to crash at, not a wait: any delay is a valid test
                daemon.process.signal(SIGKILL)
                _ = daemon.process.wait()
                kills += 1
                daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false"])
                if let r = daemon.process.log.range(of: "journal_records=") {
                    replayedRecords += Int(daemon.process.log[r.upperBound...].prefix { $0.isNumber }) ?? 0
                }
            }
        }
        #expect(kills >= 3)
        #expect(replayedRecords > 0)  // restarts really recovered from the journal
        #expect(eventually(timeout: 60) { rec.messages().filter { !$0.payload.isEmpty }.count >= expected.count })
        #expect(daemon.waitIdle())
        #expect(try rec.barrier())  // nothing more arrives
        let live = rec.messages().filter { !$0.payload.isEmpty }.map(\.text).sorted()
        #expect(Set(live) == Set(expected), "lost: \(Set(expected).subtracting(live).count), spurious: \(Set(live).subtracting(expected).count)")
        // Outputs are at least once: a kill between the broker's acknowledgement of an output and
        // its deletion from the outbox re-publishes it, byte for byte (same alert id). Nothing else
        // may repeat: every extra message is a copy of an expected one (checked by the set above).
        if live.count != expected.count { print("kill -9 test: \(live.count - expected.count) identical re-deliveries") }
    }
}

/// Group commit: with a commit interval longer than the test, samples that publish nothing are
/// never committed before the kill; the journal alone brings them back.
@Suite(.serialized) struct GroupCommitTests {
    @Test func uncommittedStateComesBackFromTheJournalAfterKillNine() throws {
        let scenario = try Scenario.load(RepoPaths.root + "/simulator/scenarios/jamie-plateau.scenario")
        let records = ScenarioVerifier.traffic([scenario])
        let expected = try DurabilityTests.expectedAlerts(records)
        let broker = try MosquittoBroker()
        let state = TemporaryPath.make("mw-state")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/alerts/#"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        let extra = ["--publish-series", "false", "--commit-interval", "60000"]
        var daemon = try DaemonUnderTest(broker: broker, state: state, extra: extra)
        let cut = records.count * 70 / 90
        // First a few samples that publish nothing: their state waits for a commit that never
        // comes, while the alerts that follow commit only the user who made them. The journal
        // must keep the quiet samples through those commits and the housekeeping that releases
        // what is committed.
        let quiet = (0..<5).map { sampleJSON(id: "q\($0)", value: 1.2, end: "2026-04-01T12:0\($0):00Z") }
        for q in quiet { try pub.publish(samplesTopic("quiet"), q) }
        // In batches of their own: a batch with outputs (day closes record series in the history
        // even with --publish-series false) commits its users, and these must not be among them.
        #expect(daemon.waitProcessed(quiet.count))
        for r in records[..<cut] { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
        #expect(daemon.waitProcessed(cut + quiet.count, timeout: 60))
        #expect(eventually { !rec.messages().filter { !$0.payload.isEmpty }.isEmpty })  // alerts went out
        // Two housekeeping rounds. Once the input has stopped, only the housekeeping timer hands the
        // shard work (event clock: no ticks), one batch a round, and a round releases the journal
        // before the next round is queued: three batches more, and a release ran after the alerts.
        let settled = daemon.metric("mobilityd_evaluation_seconds_count") ?? -1
        #expect(eventually { (daemon.metric("mobilityd_evaluation_seconds_count") ?? -1) >= settled + 3 })
        // Batches that published nothing were not committed: fewer commits than batches.
        let m = daemon.metrics()
        let commits = m["mobilityd_state_commits_total"] ?? -1, batches = m["mobilityd_evaluation_seconds_count"] ?? -1
        #expect(commits >= 0 && commits < batches, "commits \(commits), batches \(batches)")
        daemon.process.signal(SIGKILL)
        _ = daemon.process.wait()
        daemon = try DaemonUnderTest(broker: broker, state: state, extra: extra)
        // The journal held the messages whose state was not committed: the restart applied them
        // (replayed records not skipped as already committed).
        let replayed = daemon.process.log.range(of: "journal_records=").map { Int(daemon.process.log[$0.upperBound...].prefix { $0.isNumber }) ?? 0 } ?? 0
        #expect(eventually { daemon.metrics().filter { $0.key.hasPrefix("mobilityd_queue_depth") }.values.allSatisfy { $0 == 0 } })
        let skipped = Int(daemon.metric("mobilityd_journal_skipped_total") ?? -1)
        #expect(skipped >= 0 && replayed > skipped, "replayed \(replayed), skipped \(skipped)")
        // The quiet samples are known again: re-sent, they are duplicates.
        for q in quiet { try pub.publish(samplesTopic("quiet"), q) }
        #expect(eventually { daemon.metric("mobilityd_samples_duplicate_total") == Double(quiet.count) })
        for r in records[cut...] { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
        #expect(eventually(timeout: 60) { rec.messages().filter { !$0.payload.isEmpty }.count >= expected.count })
        #expect(daemon.waitIdle())
        #expect(try rec.barrier())  // nothing more arrives
        #expect(Set(rec.messages().filter { !$0.payload.isEmpty }.map(\.text)) == Set(expected))
    }
}

/// The state directory's disk fills up: the daemon stops acknowledging (the broker keeps the
/// messages), reports unhealthy, and recovers without loss when space is back.
@Suite(.serialized) struct DiskFullTests {
    @Test func fullDiskStopsAcknowledgingAndRecoversWithoutLoss() throws {
        let mountPoint = TemporaryPath.make("mw-tmpfs")
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let mount = try ChildProcess("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", mountPoint])
        try #require(mount.wait() == 0, "mounting a tmpfs needs root: \(mount.log)")
        defer {
            _ = try? ChildProcess("/usr/bin/umount", ["-l", mountPoint]).wait()
            try? FileManager.default.removeItem(atPath: mountPoint)
        }
        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker, state: mountPoint + "/state", extra: ["--publish-series", "false"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        for i in 0..<50 { try pub.publish(samplesTopic("d\(i % 5)"), sampleJSON(id: "a\(i)", value: 1.1, end: "2026-04-01T12:00:00Z")) }
        #expect(daemon.waitProcessed(50))
        // Fill the disk.
        let filler = mountPoint + "/filler"
        _ = try ChildProcess("/usr/bin/dd", ["if=/dev/zero", "of=\(filler)", "bs=64k", "count=1000"]).wait()
        for i in 0..<200 { try pub.publish(samplesTopic("d\(i % 5)"), sampleJSON(id: "b\(i)", value: 1.1, end: "2026-04-02T12:00:00Z")) }
        #expect(eventually { httpGet(port: daemon.metricsPort, path: "/healthz")?.status == 503 })
        // Whichever refuses first (the journal append or the SQLite commit) is named.
        let body = httpGet(port: daemon.metricsPort, path: "/healthz")?.body ?? ""
        #expect(body.contains("journal") || body.contains("state store"), "\(body)")
        // The daemon has done all it can: the journal refuses (the subscriber's callback waits, so
        // nothing more is taken or acknowledged) and every message it took is processed.
        #expect(
            eventually {
                let m = daemon.metrics()
                return m["mobilityd_journal_writable"] == 0
                    && m.filter { $0.key.hasPrefix("mobilityd_queue_depth") || $0.key.hasPrefix("mobilityd_shard_busy_seconds") }.values.allSatisfy { $0 == 0 }
            })
        let stuck = daemon.metric("mobilityd_messages_received_total") ?? 0
        #expect(stuck < 250)  // not everything got through while the disk was full
        // Space is back: everything arrives, nothing lost.
        try FileManager.default.removeItem(atPath: filler)
        #expect(daemon.waitProcessed(250, timeout: 30))
        #expect(daemon.metric("mobilityd_samples_accepted_total") == 250)
        #expect(eventually { httpGet(port: daemon.metricsPort, path: "/healthz")?.status == 200 })
        #expect(daemon.process.stop() == 0)
    }
}

extension DiskFullTests {
    /// Stopped while the journal refuses a message, the daemon neither journals nor acknowledges
    /// it: the broker's session delivers it to the next start, and no user's input is lost.
    @Test func stoppingWhileTheJournalRefusesLosesNothing() throws {
        let mountPoint = TemporaryPath.make("mw-tmpfs")
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let mount = try ChildProcess("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", mountPoint])
        try #require(mount.wait() == 0, "mounting a tmpfs needs root: \(mount.log)")
        defer {
            _ = try? ChildProcess("/usr/bin/umount", ["-l", mountPoint]).wait()
            try? FileManager.default.removeItem(atPath: mountPoint)
        }
        let broker = try MosquittoBroker()
        let state = mountPoint + "/state"
        let first = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        for i in 0..<20 { try pub.publish(samplesTopic("a\(i)"), sampleJSON(id: "a\(i)", value: 1.1, end: "2026-04-01T12:00:00Z")) }
        #expect(first.waitProcessed(20))
        let filler = mountPoint + "/filler"
        _ = try ChildProcess("/usr/bin/dd", ["if=/dev/zero", "of=\(filler)", "bs=64k", "count=1000"]).wait()
        // One user a message: the users with state at the end say which messages arrived.
        for i in 0..<100 { try pub.publish(samplesTopic("b\(i)"), sampleJSON(id: "b\(i)", value: 1.1, end: "2026-04-02T12:00:00Z")) }
        #expect(eventually { first.metric("mobilityd_journal_writable") == 0 })
        #expect(first.process.stop() == 0, "\(first.process.log)")
        try FileManager.default.removeItem(atPath: filler)
        let second = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false"])
        #expect(eventually(timeout: 30) { second.metric("mobilityd_users") == 120 }, "\(second.metric("mobilityd_users") ?? -1) users")
        #expect(second.process.stop() == 0)
    }
}

/// The end-to-end protocol: a broker killed with SIGKILL loses what it held since its last
/// snapshot; the gateway (`mobility-sim play --resend`) re-sends what mobilityd never acknowledged
/// on `users/{user}/acks`, and every sample is applied exactly once.
@Suite(.serialized) struct CommitAcknowledgementTests {
    @Test func gatewayResendsWhatABrokerCrashLost() throws {
        let records = Array(Population(users: 20, days: 30, seed: 9).traffic())
        var ids = Set<String>()
        for r in records where r.topic.hasSuffix("/samples") {
            if case .success(.array(let a)) = JSONValue.parse(r.payload) { for x in a { if case .string(let id)? = x["id"] { ids.insert(id) } } }
        }
        let file = TemporaryPath.make("mw-acks", suffix: ".jsonl")
        try (records.map(\.line).joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        // The broker snapshots only at start, so a SIGKILL loses everything it received since.
        let broker = try MosquittoBroker(persistence: true, autosaveSeconds: 3600)
        let state = TemporaryPath.make("mw-state")
        defer { try? FileManager.default.removeItem(atPath: state) }
        var daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false"])
        #expect(daemon.process.stop() == 0)  // its session queues what the gateway publishes
        let play = try ChildProcess(ChildProcess.product("mobility-sim"), ["play", file, "--broker", broker.url, "--resend"])
        #expect(eventually(timeout: 30) { play.log.contains("published \(records.count) messages (\(records.count) acknowledged)") }, "\(play.log)")
        broker.stop(signal: SIGKILL)  // the broker had acknowledged everything; now it is gone
        try broker.start()
        daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false"])
        #expect(play.wait(timeout: 120) == 0, "\(play.log)")
        #expect(play.log.contains("every user's samples acknowledged"))
        #expect(play.log.contains("re-sending"), "the gateway had to re-send what the broker lost:\n\(play.log)")
        #expect(
            eventually(timeout: 30) { daemon.metric("mobilityd_samples_accepted_total") == Double(ids.count) },
            "accepted \(daemon.metric("mobilityd_samples_accepted_total") ?? -1) of \(ids.count)\n\(play.log)")
    }
}

/// Back-pressure: a publisher much faster than one shard with a tiny queue. The MQTT thread blocks
/// on the full queue (the broker holds the backlog), memory stays bounded, nothing is lost.
@Suite(.serialized) struct BackpressureTests {
    static func residentKB(_ pid: pid_t) -> Int {
        guard let s = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = s.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }

    @Test func fastPublisherSlowDaemonBoundedMemoryNothingLost() throws {
        let records = Array(Population(users: 50, days: 20, seed: 4).traffic())
        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker, extra: ["--publish-series", "false", "--shards", "1", "--queue-capacity", "50"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        var peak = 0
        let start = Self.residentKB(daemon.process.pid)
        for (i, r) in records.enumerated() {
            try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self))
            if i % 500 == 0 { peak = max(peak, Self.residentKB(daemon.process.pid)) }
        }
        var depthSeen = 0.0
        #expect(
            eventually(timeout: 120) {
                let m = daemon.metrics()
                depthSeen = max(depthSeen, m["mobilityd_queue_depth{shard=\"0\"}"] ?? 0)
                peak = max(peak, Self.residentKB(daemon.process.pid))
                return m["mobilityd_messages_received_total"] == Double(records.count)
            })
        #expect(depthSeen <= 50)  // the queue never grows past its capacity
        #expect(daemon.metric("mobilityd_rejected_total{reason=\"not_json\"}") == 0)
        // Bounded: the daemon's memory grows with its users' state, not with the backlog.
        #expect(peak - start < 150_000, "resident grew from \(start) kB to \(peak) kB")
        print("back-pressure: \(records.count) messages, resident \(start) → \(peak) kB, max queue depth seen \(Int(depthSeen))")
    }
}
