import Foundation
import PostgresStore
import TestSupport
import Testing

@testable import MobilityDaemon

/// The supervisor's lease timing on a manual clock, in-process: real PostgreSQL leases, a run
/// that is not started (no broker, no process). The broker's side is PartitionBrokerLossTests'
/// and PartitionFailoverTests'.
@Suite(.serialized) struct PartitionSupervisorTests {
    static let leaseMs = 2_000
    static let ms: UInt64 = 1_000_000

    /// A supervisor on `clock` holding the 4 partitions of a fresh database, with a run (not
    /// started; its end already signalled, so that stopping it returns at once).
    static func holding(clock: DaemonClock) throws -> (PartitionSupervisor, PartitionSupervisor.Loop, PartitionLeases, PostgresServer, String) {
        let server = try PostgresServer.shared()
        let url = try server.createDatabase()
        let leases = try PartitionLeases(url: url, owner: "t@test pid \(getpid())", count: 4, leaseMs: leaseMs)
        _ = try leases.heartbeat(holding: [])
        let supervisor = PartitionSupervisor(configuration: DaemonConfiguration(), clock: clock)
        var loop = PartitionSupervisor.Loop(lastRenewal: clock.uptimeNanoseconds())
        loop.held = try leases.claim(4)
        loop.beats = 1
        let run = Run(daemon: Daemon(configuration: DaemonConfiguration(), clock: clock))
        run.done.signal()
        loop.run = run
        return (supervisor, loop, leases, server, String(url.split(separator: "/").last!))
    }

    /// The live leases of the test's owner, as the database has them.
    static func live(_ server: PostgresServer, _ database: String) -> Int {
        Int((try? server.psql("SELECT count(*) FROM partitions WHERE lease_until > now() AND owner LIKE 't@%'", database: database)) ?? "") ?? -1
    }

    /// Partition sessions without a broker for a whole lease, on the supervisor's clock: every
    /// lease is given up and the instance leaves; a moment less keeps them.
    @Test func sessionsCutOffForAWholeLeaseOnTheClockGiveTheLeasesUp() throws {
        let manual = ShardTests.ManualClock(wallMs: 1_775_048_400_000, step: 0)
        var (supervisor, loop, leases, server, database) = try Self.holding(clock: manual.clock)
        #expect(loop.held.count == 4)
        loop.run?.daemon.partitionLinks.lost(2, now: manual.clock.uptimeNanoseconds())
        manual.advance(nanoseconds: UInt64(Self.leaseMs) * Self.ms - 1)
        supervisor.giveUpIfCutOff(&loop, leases: leases, leaseMs: Self.leaseMs)
        #expect(!loop.away && loop.run != nil && loop.held.count == 4, "a session down for less than a lease keeps the leases")
        manual.advance(nanoseconds: 1)
        supervisor.giveUpIfCutOff(&loop, leases: leases, leaseMs: Self.leaseMs)
        #expect(loop.away && loop.run == nil && loop.held.isEmpty)
        #expect(Self.live(server, database) == 0, "the leases are released at once, not left to lapse")
    }

    /// A run whose stop takes longer than a lease (its publisher waiting for the broker, its
    /// shards' last commits) keeps its leases meanwhile: the supervisor renews them while it
    /// waits, so no other instance claims the partitions and fences the run's last commits.
    @Test func leasesAreRenewedWhileARunTakesLongerThanALeaseToStop() throws {
        let manual = ShardTests.ManualClock(wallMs: 1_775_048_400_000, step: 0)
        var (supervisor, loop, leases, server, database) = try Self.holding(clock: manual.clock)
        let slow = Run(daemon: Daemon(configuration: DaemonConfiguration(), clock: manual.clock))
        loop.run = slow
        let stopping = Thread {
            usleep(UInt32(Self.leaseMs) * 1_500)  // a lease and a half
            slow.done.signal()
        }
        stopping.start()
        supervisor.stopRun(&loop, renewing: leases)
        #expect(loop.run == nil)
        #expect(loop.held.count == 4)
        #expect(Self.live(server, database) == 4, "the leases lapsed while the run stopped")
    }

    /// A run that cannot read its store at the start tells the supervisor why: a store that does
    /// not answer (stopped) lets it start the run again once the store answers; one that answers
    /// and refuses the session (a role that does not exist) ends the process. Both exit 1.
    @Test func aRunThatCannotReadItsStoreSaysWhetherItDidNotAnswer() throws {
        let server = try PostgresServer()  // its own: the test stops it
        let url = try server.createDatabase()
        let run = { (store: String) -> (code: Int32, unavailable: Bool) in
            var c = DaemonConfiguration()
            c.rules = RepoPaths.rules
            c.state = NSTemporaryDirectory() + "mw-run-store-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: c.state) }
            c.store = .postgres(url: store)
            c.partitioning = Partitioning(count: 4)
            let d = Daemon(configuration: c, claimed: PartitionClaim(count: 4, leases: [(0, 1)]))
            return (d.run(), d.failedOnUnavailableStore)
        }
        let refused = run(url.replacingOccurrences(of: "postgres://mw@", with: "postgres://nobody_here@"))
        #expect(refused.code == 1 && !refused.unavailable, "\(refused)")
        server.stop()
        let down = run(url)
        #expect(down.code == 1 && down.unavailable, "\(down)")
    }

    /// A heartbeat the database does not answer stops the run once the leases went a whole
    /// lease unrenewed on the supervisor's clock, not before.
    @Test func failedHeartbeatsStopTheRunAfterAWholeLeaseOnTheClock() throws {
        let manual = ShardTests.ManualClock(wallMs: 1_775_048_400_000, step: 0)
        var (supervisor, loop, leases, server, database) = try Self.holding(clock: manual.clock)
        let rule = PartitionOwnership(count: 4)
        let cut = {
            _ = try server.psql(
                "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = '\(database)' AND pid <> pg_backend_pid()",
                database: "postgres")
        }
        try cut()
        manual.advance(nanoseconds: UInt64(Self.leaseMs) * Self.ms - 1)
        supervisor.heartbeat(&loop, leases: leases, rule: rule, leaseMs: Self.leaseMs)
        #expect(loop.run != nil && loop.held.count == 4, "a failed heartbeat within the lease keeps the run")
        supervisor.heartbeat(&loop, leases: leases, rule: rule, leaseMs: Self.leaseMs)  // reconnects, renews
        #expect(loop.run != nil && loop.held.count == 4 && loop.beats == 2)
        try cut()
        manual.advance(nanoseconds: UInt64(Self.leaseMs) * Self.ms - 1)
        supervisor.heartbeat(&loop, leases: leases, rule: rule, leaseMs: Self.leaseMs)
        #expect(loop.run != nil && loop.held.count == 4, "counted from the last renewal, not the first claim")
        supervisor.heartbeat(&loop, leases: leases, rule: rule, leaseMs: Self.leaseMs)  // reconnects, renews
        #expect(loop.beats == 3)
        try cut()
        manual.advance(nanoseconds: UInt64(Self.leaseMs) * Self.ms)
        supervisor.heartbeat(&loop, leases: leases, rule: rule, leaseMs: Self.leaseMs)
        #expect(loop.run == nil && loop.held.isEmpty, "a whole lease unrenewed stops the run")
    }
}
