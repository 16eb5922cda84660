import Foundation
import Glibc
import MobilityModel
import StateStore
import TestSupport
import Testing

/// mobilityd against a damaged ingest journal or a store that does not match it, on a real
/// mosquitto: it refuses to start (65: journal damaged, 66: store missing, empty or older than
/// the journal) without touching either, and with the operator's flag it recovers every intact
/// record, numbers new records above what the store committed, and says what was lost (log,
/// metrics, `/healthz` degraded).
@Suite(.serialized) struct DamagedStateStartupTests {
    /// Sample `i`: user `p0`…`p2`, id `s<i>`, a minute after the previous one, three days ago.
    static let base = Int64(Date().timeIntervalSince1970) / 60 * 60 - 3 * 86_400
    private func publish(_ pub: MQTTRecorder, _ range: ClosedRange<Int>) throws {
        for i in range {
            let end = Timestamp(milliseconds: (Self.base + Int64(i) * 60) * 1000).description
            try pub.publish(samplesTopic("p\(i % 3)"), sampleJSON(id: "s\(i)", value: 1.0 + Double(i % 50) / 100, end: end))
        }
    }

    private func counters(_ d: DaemonUnderTest) -> (accepted: Double, duplicates: Double, received: Double) {
        let m = d.metrics()
        return (m["mobilityd_samples_accepted_total"] ?? -1, m["mobilityd_samples_duplicate_total"] ?? -1, m["mobilityd_messages_received_total"] ?? -1)
    }

    /// mobilityd on `state` without waiting for it to connect (a refused start never does).
    private func start(_ broker: MosquittoBroker, _ state: String, _ extra: [String] = []) throws -> ChildProcess {
        try ChildProcess(
            ChildProcess.product("mobilityd"),
            [
                "--broker", broker.url, "--rules", RepoPaths.rules, "--state", state, "--clock", "event", "--client-id", "mobilityd-test", "--metrics-address",
                "off"
            ]
                + extra)
    }

    private func segments(_ state: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: state + "/journal")) ?? []).filter { $0.hasSuffix(".log") }.sorted().map {
            state + "/journal/" + $0
        }
    }

    private func size(_ path: String) -> Int { ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? -1 }

    private func flipMiddle(_ path: String) throws {
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        for k in 0..<16 { bytes[bytes.count / 2 + k] ^= 0x5A }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// Sends every sample again, as a gateway re-sending its backlog would: each one the state
    /// already holds is a duplicate, each one it lost is accepted. Returns the accepted count.
    private func resendAll(_ pub: MQTTRecorder, _ d: DaemonUnderTest, _ range: ClosedRange<Int>) throws -> (accepted: Int, duplicates: Int) {
        let before = counters(d)
        try publish(pub, range)
        #expect(eventually(timeout: 60) { counters(d).received == before.received + Double(range.count) }, "\(counters(d)) after \(before)")
        #expect(d.waitIdle())
        let after = counters(d)
        return (Int(after.accepted - before.accepted), Int(after.duplicates - before.duplicates))
    }

    /// The acknowledged records after damage in the middle of the journal are recovered, not cut
    /// away. Run 1 commits 150 samples; run 2 journals 150 more without committing them (a long
    /// commit interval) and is killed; 16 bytes are flipped in the middle of run 2's segment.
    @Test func damageInTheMiddleIsRefusedThenEveryIntactRecordIsRecovered() throws {
        let broker = try MosquittoBroker()
        let state = TemporaryPath.make("mw-state")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        var daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false"])
        try publish(pub, 1...150)
        #expect(daemon.waitProcessed(150, timeout: 60) && daemon.waitIdle())
        #expect(daemon.process.stop() == 0)
        daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false", "--commit-interval", "60000"])
        try publish(pub, 151...300)
        #expect(daemon.waitProcessed(150, timeout: 60))
        daemon.process.signal(SIGKILL)
        _ = daemon.process.wait()
        let damaged = try #require(segments(state).last)
        let bytes = size(damaged)
        try flipMiddle(damaged)
        let found = IngestJournal.inspect(state + "/journal")
        let lost = Int(try #require(found.damage.first).lost)
        #expect(found.damage.count == 1 && lost >= 1 && lost <= 2)

        // Refused, naming the damage and the flag; nothing is cut.
        let refused = try start(broker, state)
        #expect(refused.wait(timeout: 20) == 65, "\(refused.log)")
        #expect(refused.log.contains("refusing to start: ingest journal damaged") && refused.log.contains("--recover-journal"), "\(refused.log)")
        #expect(refused.log.contains((damaged as NSString).lastPathComponent))
        #expect(size(damaged) == bytes)

        // Recovered: every intact record is replayed, what was lost is said and counted.
        daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false", "--recover-journal"])
        #expect(daemon.waitIdle())
        #expect(daemon.process.log.contains("state recovered with losses") && daemon.process.log.contains("records_lost=\(lost)"), "\(daemon.process.log)")
        #expect(daemon.metric("mobilityd_state_records_lost") == Double(lost))
        #expect(daemon.metric("mobilityd_state_damage{side=\"journal\"}") == 1)
        let health = httpGet(port: daemon.metricsPort, path: "/healthz")
        #expect(health?.status == 200 && health?.body.hasPrefix("degraded: state recovered at start with losses: \(lost) acknowledged records lost") == true)
        // New messages are taken, and re-sending everything finds exactly the lost records missing.
        let fresh = try resendAll(pub, daemon, 301...320)
        #expect(fresh.accepted == 20)
        let again = try resendAll(pub, daemon, 1...300)
        #expect(again.accepted == lost && again.duplicates == 300 - lost, "\(again)")
        #expect(daemon.process.stop() == 0)

        // The damaged segment was released once its records were committed: the next start is whole.
        daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false"])
        #expect(httpGet(port: daemon.metricsPort, path: "/healthz")?.body == "ok\n")
        #expect(daemon.process.stop() == 0)
    }

    /// Damage in a stretch the store had already committed past: a cut there numbered new
    /// records below committed positions, and the next live messages were skipped as already
    /// committed (0 samples accepted).
    @Test func afterDamageNewMessagesAreNeverSkippedAsAlreadyCommitted() throws {
        let broker = try MosquittoBroker()
        let state = TemporaryPath.make("mw-state")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        var daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false"])
        try publish(pub, 1...300)
        #expect(daemon.waitProcessed(300, timeout: 60) && daemon.waitIdle())
        daemon.process.signal(SIGKILL)
        _ = daemon.process.wait()
        try flipMiddle(try #require(segments(state).last))

        // Refused while the store has not recorded those records as committed, started with the
        // damage reported once it has (nothing lost then): either way the damage is said, and
        // every new message is taken.
        let first = try start(broker, state)
        #expect(eventually(timeout: 20) { !first.isRunning || first.log.contains("msg=started") }, "\(first.log)")
        if !first.isRunning {
            #expect(first.wait() == 65, "\(first.log)")
            #expect(first.log.contains("refusing to start: ingest journal damaged"), "\(first.log)")
            daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false", "--recover-journal"])
        } else {
            #expect(first.log.contains("ingest journal damaged") && first.log.contains("nothing lost"), "\(first.log)")
            #expect(first.stop() == 0)
            daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false"])
        }
        #expect(daemon.waitIdle())
        #expect(daemon.metric("mobilityd_state_damage{side=\"journal\"}") == 1)
        #expect(try resendAll(pub, daemon, 301...400).accepted == 100)
        #expect(daemon.process.stop() == 0)
    }

    /// A zero-length `state.sqlite` (WAL removed) after the journal released its first segment:
    /// refused with 66; with --rebuild-store the daemon rebuilds from the journal and says which
    /// records were released into the lost store.
    @Test func anEmptiedStoreIsRefusedThenRebuiltFromTheJournal() throws {
        let broker = try MosquittoBroker()
        let state = TemporaryPath.make("mw-state")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        var daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false"])
        try publish(pub, 1...90)
        #expect(daemon.waitProcessed(90, timeout: 60) && daemon.waitIdle())
        #expect(daemon.process.stop() == 0)
        // The second run writes a segment of its own and releases the first once committed.
        daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false"])
        try publish(pub, 91...150)
        #expect(daemon.waitProcessed(60, timeout: 60) && daemon.waitIdle())
        #expect(eventually(timeout: 10) { segments(state).count == 1 && !segments(state)[0].hasSuffix("0000000000000001.log") }, "\(segments(state))")
        #expect(daemon.process.stop() == 0)
        #expect(truncate(state + "/state.sqlite", 0) == 0)
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: state + "/state.sqlite" + suffix) }

        let refused = try start(broker, state)
        #expect(refused.wait(timeout: 20) == 66, "\(refused.log)")
        #expect(
            refused.log.contains("the state store is empty or new") && refused.log.contains("records 1–90 were released")
                && refused.log.contains("--rebuild-store"), "\(refused.log)")

        daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false", "--rebuild-store"])
        #expect(daemon.waitIdle())
        #expect(counters(daemon).accepted == 60, "the journal's records are replayed")
        #expect(daemon.metric("mobilityd_state_records_lost") == 90 && daemon.metric("mobilityd_state_damage{side=\"store\"}") == 1)
        #expect(httpGet(port: daemon.metricsPort, path: "/healthz")?.body.hasPrefix("degraded: ") == true)
        #expect(try resendAll(pub, daemon, 1...150) == (accepted: 90, duplicates: 60))
        #expect(daemon.process.stop() == 0)

        // The rebuilt store vouches for what it now holds.
        daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false"])
        #expect(httpGet(port: daemon.metricsPort, path: "/healthz")?.body == "ok\n")
        #expect(daemon.process.stop() == 0)
    }

    /// The same check with the state in PostgreSQL: a new, empty database beside the journal of
    /// an earlier run (a database replaced, or pointed at by mistake) is refused, then rebuilt
    /// from the journal with --rebuild-store.
    @Test func aNewPostgreSQLDatabaseBesideAJournalIsRefused() throws {
        let server = try PostgresServer.shared()
        let broker = try MosquittoBroker()
        let state = TemporaryPath.make("mw-state")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        var daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false", "--store", try server.createDatabase()])
        try publish(pub, 1...30)
        #expect(daemon.waitProcessed(30, timeout: 60) && daemon.waitIdle())
        #expect(daemon.process.stop() == 0)
        let other = try server.createDatabase()
        let refused = try start(broker, state, ["--store", other])
        #expect(refused.wait(timeout: 20) == 66, "\(refused.log)")
        #expect(refused.log.contains("the state store is empty or new, but the journal holds records 1–30"), "\(refused.log)")
        daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false", "--store", other, "--rebuild-store"])
        #expect(daemon.waitIdle())
        #expect(counters(daemon).accepted == 30)
        #expect(daemon.process.stop() == 0)
    }

    /// A store SQLite cannot read stops the start (exit 1, as before); with --rebuild-store it is
    /// moved aside, not deleted, and the state is rebuilt from the journal.
    @Test func anUnreadableStoreIsMovedAsideOnlyWhenAsked() throws {
        let broker = try MosquittoBroker()
        let state = TemporaryPath.make("mw-state")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        var daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false"])
        try publish(pub, 1...40)
        #expect(daemon.waitProcessed(40, timeout: 60) && daemon.waitIdle())
        #expect(daemon.process.stop() == 0)
        // The database header overwritten (and the WAL gone, which holds a copy of that page).
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: state + "/state.sqlite" + suffix) }
        let fh = try #require(FileHandle(forWritingAtPath: state + "/state.sqlite"))
        fh.write(Data(repeating: 0x41, count: 100))
        fh.closeFile()

        let refused = try start(broker, state)
        #expect(refused.wait(timeout: 20) == 1, "\(refused.log)")
        #expect(refused.log.contains("--rebuild-store"))
        daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false", "--rebuild-store"])
        #expect(daemon.waitIdle())
        #expect(counters(daemon).accepted == 40)
        let moved = try FileManager.default.contentsOfDirectory(atPath: state).filter { $0.hasPrefix("state.sqlite.unreadable-") }
        #expect(!moved.isEmpty && daemon.process.log.contains("moved aside"))
        #expect(daemon.process.stop() == 0)
    }
}
