import Foundation
import MQTTTransport
import StateStore

extension Daemon {
    /// What is wrong now, for `/healthz`, `STATUS=` and the watchdog: empty when healthy.
    func healthProblems(_ c: Components) -> (problems: [String], stalled: Bool) {
        let shards = c.shards
        var problems: [String] = []
        if !c.subscriber.isConnected || !c.publisher.isConnected { problems.append("broker not connected") }
        for role in evictionLoops() {
            problems.append("the broker evicts the \(role) connection right after each connect: another connection uses its client id")
        }
        if !c.router.journalWritable.load(ordering: .relaxed) { problems.append("ingest journal not writable") }
        if shards.contains(where: { !$0.stats.withLock { $0.storeHealthy } }) { problems.append("state store not accepting commits") }
        let stalled = stalledShards(shards)
        for (i, ns) in stalled {
            problems.append("shard \(i) stalled: one batch has run \(String(format: "%.1f", Double(ns) / 1e9)) s (bound \(config.stallTimeoutSeconds) s)")
        }
        return (problems, !stalled.isEmpty)
    }

    /// The roles of the connections in an eviction loop now; logs the loops that ended (a
    /// connection stayed up).
    func evictionLoops() -> [String] {
        let now = clock.uptimeNanoseconds()
        var ended: [String] = []
        let looping = evictionWatches.withLock { watches in
            var looping: [String] = []
            for role in watches.keys.sorted() {
                if watches[role]!.check(now: now) == .loopEnded { ended.append(role) }
                if watches[role]!.isLooping { looping.append(role) }
            }
            return looping
        }
        for role in ended { log.info("the broker keeps the connection now: the eviction loop is over", ["role": role]) }
        return looping
    }

    /// What degrades the run without stopping it, for `/healthz` (200, `degraded: …`) and
    /// `STATUS=`: losses the start recovered from (``DurableStateCheck``).
    func healthWarnings() -> [String] {
        let findings = stateFindings.withLock { $0 }
        guard !findings.isEmpty else { return [] }
        let count = findings.count == 1 ? "1 finding" : "\(findings.count) findings"
        if findings.allSatisfy(\.costsNothing) {
            return ["state damaged at start, nothing lost (\(count); see the log and mobilityd_state_damage)"]
        }
        return [
            "state recovered at start with losses: \(Daemon.recordsLost(findings)) acknowledged records lost (\(count); see the log and mobilityd_state_records_lost)"
        ]
    }

    /// The records `findings` cost, as said in logs and health: `N`, `at most N`, with `and an unknown number` when one cannot be known.
    static func recordsLost(_ findings: [DurableStateCheck.Finding]) -> String {
        let lost = findings.reduce(UInt64(0)) { $0 + ($1.lost ?? 0) }
        return (findings.allSatisfy(\.lostIsExact) ? "" : "at most ") + String(lost) + (findings.contains { $0.lost == nil } ? " and an unknown number" : "")
    }

    /// Shards whose batch at hand has run past `--stall-timeout`, with how long (ns).
    func stalledShards(_ shards: [Shard]) -> [(Int, UInt64)] {
        let now = clock.uptimeNanoseconds()
        let bound = UInt64(config.stallTimeoutSeconds) * 1_000_000_000
        return shards.compactMap { s in
            let busy = s.busyNanoseconds(now: now)
            return busy > bound ? (s.index, busy) : nil
        }
    }

    /// Every `interval`: `WATCHDOG=1` while no shard is stalled (systemd restarts a daemon whose
    /// pings stop), and a `STATUS=` line when health changes. Runs on its own queue, so neither
    /// a stalled shard nor a busy signal handler can hold it up.
    func startServiceTimer(_ notifier: ServiceNotifier, _ c: Components) -> DispatchSourceTimer {
        // systemd's advice: ping at half the interval. Health is reported at least every second.
        let intervalUs = min(notifier.watchdogMicroseconds.map { $0 / 2 } ?? 1_000_000, 1_000_000)
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "mobilityd.service"))
        timer.schedule(deadline: .now(), repeating: .microseconds(Int(max(intervalUs, 1000))))
        let last = LastStatus()
        timer.setEventHandler { [self] in
            let (problems, stalled) = healthProblems(c)
            if notifier.watchdogMicroseconds != nil, !stalled { notifier.watchdog() }
            let degraded = problems + healthWarnings()
            let status = degraded.isEmpty ? "running: \(c.shards.count) shards" : "degraded: " + degraded.joined(separator: "; ")
            if last.swap(status) != status { notifier.status(status) }
            if last.swapStalled(stalled) != stalled {
                if stalled {
                    log.error("shard stalled; /healthz fails and the watchdog is not pinged", ["status": status])
                } else {
                    log.info("no shard stalled any more")
                }
            }
        }
        timer.resume()
        return timer
    }
}

/// The last `STATUS=` line sent (the service timer's only state).
final class LastStatus: @unchecked Sendable {
    // Only touched on the service timer's serial queue.
    private var value = ""
    private var stalled = false
    func swap(_ v: String) -> String { defer { value = v }; return value }
    func swapStalled(_ v: Bool) -> Bool { defer { stalled = v }; return stalled }
}
