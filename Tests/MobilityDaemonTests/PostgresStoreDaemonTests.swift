import Foundation
import Glibc
import MobilityModel
import RuleEngine
import RuleLanguage
import Simulator
import TestSupport
import Testing

@testable import MobilityDaemon

/// mobilityd with its state in PostgreSQL (`--store postgres://…`) against a real mosquitto and a
/// real PostgreSQL: crashes lose nothing and re-fire nothing, as with SQLite.
@Suite(.serialized) struct PostgresStoreDaemonTests {
    @Test func killNineWithStateInPostgresLosesNothingAndInventsNothing() throws {
        let records = Array(Population(users: 20, days: 45, seed: 11).traffic())
        let expected = try DurabilityTests.expectedAlerts(records)
        #expect(expected.count > 5)
        let server = try PostgresServer.shared()
        let url = try server.createDatabase()
        let database = String(url.split(separator: "/").last!)
        let broker = try MosquittoBroker()
        let state = TemporaryPath.make("mw-state")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/alerts/#"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        let extra = ["--publish-series", "false", "--store", url]
        var rng = SplitMix64(seed: 19)
        var daemon = try DaemonUnderTest(broker: broker, state: state, extra: extra)
        #expect(daemon.process.log.contains("state store is PostgreSQL") && daemon.process.log.contains("tokens=1"))
        let chunk = 1000
        var kills = 0, next = 0
        while next < records.count {
            for r in records[next..<min(next + chunk, records.count)] { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
            next += chunk
            if kills < 3, Bool.random(using: &rng) || next >= records.count - chunk {
                usleep(UInt32.random(in: 0...150_000, using: &rng))  // a random moment to crash at, not a wait
                daemon.process.signal(SIGKILL)
                _ = daemon.process.wait()
                kills += 1
                daemon = try DaemonUnderTest(broker: broker, state: state, extra: extra)
                // Each start takes the partition over: the token counts the starts.
                #expect(daemon.process.log.contains("tokens=\(kills + 1)"), "\(daemon.process.log)")
            }
        }
        #expect(kills >= 2)
        #expect(eventually(timeout: 60) { rec.messages().filter { !$0.payload.isEmpty }.count >= expected.count })
        #expect(daemon.waitIdle())
        #expect(try rec.barrier())  // nothing more arrives
        let live = rec.messages().filter { !$0.payload.isEmpty }.map(\.text).sorted()
        #expect(Set(live) == Set(expected), "lost: \(Set(expected).subtracting(live).count), spurious: \(Set(live).subtracting(expected).count)")
        // The state is in PostgreSQL, not in a SQLite file beside the journal.
        #expect(!FileManager.default.fileExists(atPath: state + "/state.sqlite"))
        #expect(try server.psql("SELECT count(*) FROM users WHERE state IS NOT NULL", database: database) == "20")
        #expect(try server.psql("SELECT token FROM partitions", database: database) == String(kills + 1))
        #expect(daemon.process.stop() == 0)
    }

    /// A database that does not answer at start (at boot PostgreSQL may come up after mobilityd)
    /// is waited for, logged once, not fatal: the start goes on when it answers. SIGTERM while
    /// waiting stops the instance at once with 0. (It exited 1, which the shipped unit does not
    /// restart: the instance stayed down.)
    @Test func aStoreThatDoesNotAnswerYetIsWaitedFor() throws {
        let server = try PostgresServer()
        let url = try server.createDatabase()
        server.stop()
        let broker = try MosquittoBroker()
        let state = TemporaryPath.make("mw-state")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let arguments = ["--broker", broker.url, "--rules", RepoPaths.rules, "--state", state, "--metrics-address", "127.0.0.1:0", "--store", url]
        let waiting = "msg=\"cannot reach the PostgreSQL state store yet; trying again until it answers\""
        let daemon = try ChildProcess(ChildProcess.product("mobilityd"), arguments)
        #expect(eventually(timeout: 15) { daemon.log.contains(waiting) }, "\(daemon.log)")
        #expect(daemon.isRunning)
        try server.start()
        #expect(eventually(timeout: 30) { daemon.log.contains("msg=started") }, "\(daemon.log)")
        #expect(daemon.log.contains("msg=\"the PostgreSQL state store answers\""))
        #expect(daemon.log.components(separatedBy: waiting).count == 2)  // logged once
        #expect(daemon.stop() == 0, "\(daemon.log)")

        server.stop()
        let second = try ChildProcess(ChildProcess.product("mobilityd"), arguments)
        #expect(eventually(timeout: 15) { second.log.contains(waiting) }, "\(second.log)")
        #expect(second.stop(signal: SIGTERM, timeout: 5) == 0, "\(second.log)")
        #expect(second.log.contains("msg=\"stopped while waiting for the state store\""))
    }

    @Test func aPasswordInTheStoreURLIsAConfigurationError() throws {
        let state = TemporaryPath.make("mw-state")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let p = try ChildProcess(
            ChildProcess.product("mobilityd"),
            ["--rules", RepoPaths.rules, "--state", state, "--store", "postgres://mw:hunter2@127.0.0.1:1/db", "--check-config"])
        #expect(p.wait() == 2)
        #expect(p.log.contains("PGPASSFILE") && !p.log.contains("hunter2"), "\(p.log)")
    }
}

/// `--store` as the configuration reads it.
@Suite struct StoreOptionTests {
    @Test func storeNamesSQLiteInADirectoryOrAPostgresDatabase() throws {
        let byDefault = try DaemonConfiguration.load(arguments: [], environment: [:])
        #expect(byDefault.store == .sqlite && byDefault.state == "state")
        let sqlite = try DaemonConfiguration.load(arguments: ["--store", "sqlite:/var/lib/mw"], environment: [:])
        #expect(sqlite.store == .sqlite && sqlite.state == "/var/lib/mw")
        let pg = try DaemonConfiguration.load(arguments: ["--store", "postgres://mw@127.0.0.1:5432/state"], environment: [:])
        #expect(pg.store == .postgres(url: "postgres://mw@127.0.0.1:5432/state") && pg.state == "state")
        let env = try DaemonConfiguration.load(arguments: [], environment: ["MOBILITYD_STORE": "postgres://mw@db.example.org/s?sslmode=verify-full"])
        #expect(env.store == .postgres(url: "postgres://mw@db.example.org/s?sslmode=verify-full"))
        for (args, message) in [
            (["--store", "sqlite:"], "needs a directory"), (["--store", "sqlite:/a", "--state", "/b"], "two state directories"),
            (["--store", "mysql://x:pw@h/db"], "must be sqlite:DIR or postgres://"), (["--store", "postgres://mw@db.example.org/s"], "verify-full")
        ] {
            #expect("\(args)") {
                _ = try DaemonConfiguration.load(arguments: args, environment: [:])
            } throws: { e in
                let d = (e as? DaemonConfiguration.Problem)?.description ?? ""
                return d.contains(message) && !d.contains(":pw@")
            }
        }
    }
}
