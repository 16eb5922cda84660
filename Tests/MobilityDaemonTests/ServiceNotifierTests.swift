import CSQLite
import Foundation
import Glibc
import TestSupport
import Testing

/// The systemd notify protocol as a real mobilityd speaks it to a `NOTIFY_SOCKET` of the test's
/// own (no systemd needed): readiness, reload, stop, status and the watchdog, which stops being
/// pinged while a shard is stalled.
@Suite(.serialized) struct ServiceNotifierTests {
    static func environment(_ socket: NotifySocket, watchdogUsec: Int) -> [String: String] {
        ["NOTIFY_SOCKET": socket.path, "WATCHDOG_USEC": String(watchdogUsec)]
    }

    @Test func readyReloadingStoppingAndWatchdog() throws {
        let notify = try NotifySocket()
        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker, environment: Self.environment(notify, watchdogUsec: 400_000), watchdogPID: true)
        #expect(eventually { notify.messages(with: "READY=1").count == 1 })
        let ready = try #require(notify.messages(with: "READY=1").first)
        #expect(ready.contains("STATUS=running"))
        #expect(notify.messages.first?.text == "STATUS=restoring state")  // before READY, while state loads
        // Pinged at half the interval (200 ms) while healthy.
        #expect(eventually(timeout: 5) { notify.messages(with: "WATCHDOG=1").count >= 5 })

        daemon.process.signal(SIGHUP)
        #expect(eventually { daemon.metric("mobilityd_rule_reloads_total{result=\"success\"}") == 1 })
        #expect(eventually { notify.messages(with: "READY=1").count == 2 })
        let texts = notify.messages.map(\.text)
        let reloading = try #require(texts.firstIndex { $0.hasPrefix("RELOADING=1\n") })
        #expect(texts[reloading].split(separator: "\n").contains { $0.hasPrefix("MONOTONIC_USEC=") && UInt64($0.dropFirst(15)) != nil })
        #expect(texts.lastIndex { $0.hasPrefix("READY=1") }! > reloading)  // READY again after the reload

        #expect(daemon.process.stop() == 0)
        #expect(notify.messages(with: "STOPPING=1").count == 1)
    }

    @Test func withoutAMatchingWatchdogPidNothingIsPinged() throws {
        // WATCHDOG_PID names another process (a child of the one systemd started): no pings.
        let notify = try NotifySocket()
        let broker = try MosquittoBroker()
        var env = Self.environment(notify, watchdogUsec: 200_000)
        env["WATCHDOG_PID"] = "1"
        let daemon = try DaemonUnderTest(broker: broker, environment: env)
        #expect(eventually { notify.messages(with: "READY=1").count == 1 })
        #expect(!eventually(timeout: 1) { !notify.messages(with: "WATCHDOG=1").isEmpty })
        #expect(daemon.process.stop() == 0)
    }

    /// A shard blocked in a commit — another process holds the database's write lock, as an
    /// operator's sqlite3 session might — is stalled once its batch has run past --stall-timeout:
    /// /healthz says so and the watchdog is not pinged; when the lock goes, both recover.
    @Test func aStalledShardFailsHealthzAndStopsTheWatchdog() throws {
        let notify = try NotifySocket()
        let broker = try MosquittoBroker()
        let state = TemporaryPath.make("mw-stall")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let daemon = try DaemonUnderTest(
            broker: broker, state: state, extra: ["--stall-timeout", "1", "--commit-interval", "0", "--shards", "1"],
            environment: Self.environment(notify, watchdogUsec: 200_000), watchdogPID: true)
        #expect(eventually { notify.messages(with: "WATCHDOG=1").count >= 3 })
        #expect(httpGet(port: daemon.metricsPort, path: "/healthz")?.status == 200)

        var db: OpaquePointer?
        #expect(sqlite3_open(state + "/state.sqlite", &db) == SQLITE_OK)
        defer { sqlite3_close(db) }
        #expect(sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK)  // the write lock; the daemon's commit waits up to 5 s
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        try pub.publish(samplesTopic("sam"), sampleJSON(id: "s1", value: 1.1, end: "2026-04-01T12:00:00Z"))

        #expect(eventually(timeout: 4) { httpGet(port: daemon.metricsPort, path: "/healthz")?.body.contains("shard 0 stalled") == true })
        #expect(httpGet(port: daemon.metricsPort, path: "/healthz")?.status == 503)
        #expect((daemon.metric("mobilityd_shard_busy_seconds{shard=\"0\"}") ?? 0) > 1)
        // Pings received between two consecutive observations of the stall (the same batch, stalled
        // throughout: a new one would need a second to stall again): one may be in flight, no more.
        var pingsWhileStalled = 0, stalledSeconds = 0.0
        var previous: (at: Date, pings: Int)?
        let end = Date().addingTimeInterval(1.5)
        while Date() < end {
            let pings = notify.messages(with: "WATCHDOG=1").count
            let stalled = httpGet(port: daemon.metricsPort, path: "/healthz")?.body.contains("stalled") == true
            if stalled, let p = previous { pingsWhileStalled += pings - p.pings; stalledSeconds += Date().timeIntervalSince(p.at) }
            previous = stalled ? (Date(), pings) : nil
            usleep(50_000)  // the sampling period of this observation, not a synchronisation
        }
        #expect(stalledSeconds > 0.5)  // observed for long enough to have seen pings every 100 ms
        #expect(pingsWhileStalled <= 1, "\(pingsWhileStalled) pings in \(stalledSeconds) s of stall")
        #expect(notify.messages.contains { $0.text.hasPrefix("STATUS=degraded: ") && $0.text.contains("shard 0 stalled") })
        let pings = notify.messages(with: "WATCHDOG=1").count

        #expect(sqlite3_exec(db, "ROLLBACK", nil, nil, nil) == SQLITE_OK)
        #expect(eventually(timeout: 10) { notify.messages(with: "WATCHDOG=1").count > pings + 3 })
        #expect(eventually { httpGet(port: daemon.metricsPort, path: "/healthz")?.status == 200 })
        #expect(daemon.process.log.contains("shard stalled"))
        #expect(daemon.process.stop() == 0)
    }
}
