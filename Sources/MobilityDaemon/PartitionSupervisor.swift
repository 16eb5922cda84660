import Dispatch
import Foundation
import PostgresStore
import Synchronization

/// `mobilityd --partitions P`: holds leases on a share of the partitions (``PartitionLeases``,
/// ``PartitionOwnership``) and runs the daemon on them, one run at a time. Every heartbeat (a
/// third of the lease) renews the leases and reconsiders the share; when it changes (an instance
/// joined or left, a lease was lost) the run is stopped — its partition sessions first, so what
/// is not committed is not acknowledged — leases given up are released, and a run starts on the
/// new set. A lease not renewed for a whole lease (the database unreachable, this process paused)
/// stops the run too; a run that outlived its lease anyway is harmless: the next owner's claim
/// raised the tokens, and every commit of the old run is fenced. The first fenced commit stops
/// that run at once and wakes the supervisor, which heartbeats, drops the lost leases and rejoins.
/// A run whose partition session has had no broker for a whole lease gives every lease up and
/// leaves, so that the others take its partitions; it rejoins when the broker answers again.
/// Before any of it, the broker's JetStream settings are checked (``JetStreamRequirements``).
/// SIGTERM and SIGINT end the supervisor's ``termination`` (``SignalService``), which stops the run.
package final class PartitionSupervisor: Sendable {
    let config: DaemonConfiguration
    let log: Logger
    /// What the heartbeats, the lease bound and the runs read.
    let clock: DaemonClock
    /// What ends the supervisor: SIGTERM, SIGINT, or a caller in the process.
    let termination = Termination()
    private let wake = DispatchSemaphore(value: 0)
    private let current = Mutex<Daemon?>(nil)

    /// A supervisor for a configuration with ``DaemonConfiguration/partitioning`` and a PostgreSQL
    /// store, reading `clock`.
    package init(configuration: DaemonConfiguration, clock: DaemonClock = .system) {
        config = configuration
        self.clock = clock
        log = Logger(format: configuration.logFormat, level: configuration.logLevel)
        termination.whenRequested { [weak self] in
            self?.current.withLock { $0 }?.requestStop()
            self?.wake.signal()
        }
    }

    /// What the supervisor's loop holds between heartbeats.
    struct Loop {
        var held: [PartitionLeases.Lease] = []
        var run: Run?
        /// When the leases were last renewed (the clock's uptime, ns).
        var lastRenewal: UInt64 = 0
        var exitCode: Int32 = 0
        var beats = 0
        /// Cut off from the broker: every lease given up, out of the live count until it answers.
        var away = false
        /// When a run last failed because the store did not answer (the clock's uptime, ns): the
        /// next run starts after a heartbeat sent later has succeeded.
        var storeFailedAt: UInt64 = 0
    }

    /// Runs until SIGTERM/SIGINT or a run fails; the process exit code.
    package func run() -> Int32 {
        guard let p = config.partitioning, case .postgres(let url) = config.store else { return 2 }
        // SIGHUP is held between runs (each run's handler reloads its rules).
        SignalService.holdUntilHandled(SIGHUP)
        let signals = SignalService(
            .init(shutdown: [SIGTERM, SIGINT], announce: { [self] s in announceShutdown(by: s) }, reload: nil), termination: termination)
        signals.start()
        defer { signals.stop() }
        let stopping = { [termination] in termination.isRequested }
        if let code = awaitFitBroker(p, stopping: stopping, pause: { [wake] in _ = wake.wait(timeout: .now() + $0) }) { return code }
        guard StoreReachability(log: log).waitUntilReachable(url, termination: termination) else { return 0 }
        let owner = "\(config.instance)@\(ProcessInfo.processInfo.hostName) pid \(getpid())"
        let leases: PartitionLeases
        do { leases = try PartitionLeases(url: url, owner: owner, count: p.count, leaseMs: p.leaseMs) } catch {
            log.error("cannot open the partition leases", ["error": "\(error)"])
            return 1
        }
        let rule = PartitionOwnership(count: p.count)
        var loop = Loop(lastRenewal: clock.uptimeNanoseconds())
        while !termination.isRequested {
            if !loop.away {
                heartbeat(&loop, leases: leases, rule: rule, leaseMs: p.leaseMs)
                giveUpIfCutOff(&loop, leases: leases, leaseMs: p.leaseMs)
            } else if brokerAnswers() {
                (loop.away, loop.beats) = (false, 0)  // announce first, claim at the next beat
                continue
            }
            if let r = loop.run, r.done.wait(timeout: .now()) == .success {
                // The run ended by itself (a broker refusal, a store that cannot be read), or
                // because a commit was fenced: then heartbeat at once, to rejoin on what is left.
                loop.exitCode = r.code.load(ordering: .relaxed)
                current.withLock { $0 = nil }
                loop.run = nil
                if r.daemon.wasFenced, !termination.isRequested {
                    loop.exitCode = 0
                    continue
                }
                if r.daemon.failedOnUnavailableStore, !termination.isRequested {
                    log.warn("the run could not read the state store, which did not answer; starting it again once the store answers")
                    (loop.exitCode, loop.storeFailedAt) = (0, clock.uptimeNanoseconds())
                    continue
                }
                if termination.isRequested || loop.exitCode != 0 { break }
            }
            if loop.run == nil, !loop.held.isEmpty, !termination.isRequested, loop.lastRenewal > loop.storeFailedAt { startRun(&loop, count: p.count) }
            _ = wake.wait(timeout: .now() + .milliseconds(p.heartbeatMs))
        }
        if let r = loop.run {
            stopRun(&loop, renewing: leases)
            loop.exitCode = r.code.load(ordering: .relaxed)
        }
        try? leases.release(loop.held)
        try? leases.leave()
        log.info("stopped", ["exit_code": String(loop.exitCode)])
        return loop.exitCode
    }

    /// Says that `signal` ends the supervisor: the run's log line and status, or a line of its own between runs.
    private func announceShutdown(by signal: Int32) {
        if let d = current.withLock({ $0 }) { return d.announceShutdown(by: signal) }
        log.info("shutting down", ["signal": signal == SIGTERM ? "SIGTERM" : "SIGINT"])
    }

    /// Stops the run under way, if any, and waits for it; with `leases`, renewing the held ones
    /// every heartbeat meanwhile, for at most ``renewalWhileStoppingNs``. A run's stop can take
    /// longer than a lease (its publisher waits up to 5 s for the broker's answers, its shards
    /// commit what they hold): leases lapsing then would have another instance claim the
    /// partitions and fence the stopping run's last commits, and the two instances could go on
    /// taking each other's partitions at every stop. A stop that takes longer than the bound
    /// (a thread stuck in a store call) no longer holds the partitions: they lapse and others
    /// take them. Not renewed where the leases were given up (cut off from the broker) or went
    /// a whole lease unrenewed.
    /// Returns how long the stop took, in milliseconds, for the log line saying why (0: no run).
    @discardableResult
    func stopRun(_ loop: inout Loop, renewing leases: PartitionLeases? = nil) -> Int {
        guard let r = loop.run else { return 0 }
        r.daemon.requestStop()
        let every = config.partitioning?.heartbeatMs ?? 1000
        let began = clock.uptimeNanoseconds()
        var renewing = leases
        while r.done.wait(timeout: .now() + .milliseconds(every)) == .timedOut {
            guard let leases = renewing else { continue }
            let sent = clock.uptimeNanoseconds()
            guard sent &- began < renewalWhileStoppingNs else {
                log.warn(
                    "the run has not stopped; no longer renewing its leases, which lapse for other instances to take",
                    ["after_s": String(renewalWhileStoppingNs / 1_000_000_000)])
                renewing = nil
                continue
            }
            if let (_, kept) = try? leases.heartbeat(holding: loop.held) { (loop.lastRenewal, loop.held) = (sent, kept) }
        }
        current.withLock { $0 = nil }
        loop.run = nil
        return Int((clock.uptimeNanoseconds() &- began) / 1_000_000)
    }

    /// Renews the leases and reconsiders the share: leases lost or released stop the run; leases
    /// claimed stop it too (a run starts on the new set). Leases not renewed for a whole lease stop it.
    func heartbeat(_ loop: inout Loop, leases: PartitionLeases, rule: PartitionOwnership, leaseMs: Int) {
        let sent = clock.uptimeNanoseconds()
        do {
            let (live, kept) = try leases.heartbeat(holding: loop.held)
            loop.lastRenewal = sent
            loop.beats += 1
            if Set(kept) != Set(loop.held) {
                log.warn(
                    "partition leases lost; stopping their processing",
                    ["lost": Set(loop.held).subtracting(kept).map { String($0.partition) }.sorted().joined(separator: ",")])
                loop.held = kept
                stopRun(&loop, renewing: leases)
            }
            // The first beat only announces this instance, so that instances starting together
            // count each other before claiming.
            guard loop.beats > 1 else { return }
            switch rule.decide(held: loop.held.map(\.partition), live: live) {
            case .keep: break
            case .release(let ps):
                let stopMs = stopRun(&loop, renewing: leases)
                let gone = loop.held.filter { ps.contains($0.partition) }
                try leases.release(gone)
                loop.held.removeAll { ps.contains($0.partition) }
                log.info(
                    "partitions released for a rebalance",
                    ["partitions": ps.map(String.init).joined(separator: ","), "instances": String(live), "run_stop_ms": String(stopMs)])
            case .claim(let n):
                let got = try leases.claim(n)
                guard !got.isEmpty else { return }
                loop.held = (loop.held + got).sorted { $0.partition < $1.partition }
                let stopMs = stopRun(&loop, renewing: leases)
                log.info(
                    "partitions claimed",
                    [
                        "partitions": got.map { "\($0.partition)" }.joined(separator: ","),
                        "tokens": got.map { "\($0.token)" }.joined(separator: ","),
                        "instances": String(live), "run_stop_ms": String(stopMs)
                    ])
            }
        } catch {
            log.warn("partition heartbeat failed", ["error": "\(error)"])
            if loop.run != nil, clock.uptimeNanoseconds() - loop.lastRenewal >= UInt64(leaseMs) * 1_000_000 {
                log.error("partition leases expired unrenewed; stopping their processing")
                stopRun(&loop)
                loop.held = []
            }
        }
    }

    /// How long the leases are renewed while a run stops: the longest a stop takes when nothing
    /// is stuck (the publisher's 5 s wait, the partition inputs' 3 s, the shards' last commits),
    /// and at least three leases.
    var renewalWhileStoppingNs: UInt64 { UInt64(max(15_000, 3 * (config.partitioning?.leaseMs ?? 0))) * 1_000_000 }

    /// Starts a run of the daemon on the held partitions, on a thread of its own.
    private func startRun(_ loop: inout Loop, count: Int) {
        let claim = PartitionClaim(count: count, leases: loop.held.map { ($0.partition, $0.token) })
        let r = Run(daemon: Daemon(configuration: config, claimed: claim, clock: clock) { [wake] in wake.signal() })
        current.withLock { $0 = r.daemon }
        let t = Thread {
            r.code.store(r.daemon.run(), ordering: .relaxed)
            r.done.signal()
        }
        t.name = "mobilityd-run"
        t.start()
        loop.run = r
        log.info("running on partitions", ["partitions": loop.held.map { String($0.partition) }.joined(separator: ","), "of": String(count)])
    }
}

/// One run of the daemon on a set of partitions, on a thread of its own.
final class Run: Sendable {
    let daemon: Daemon
    let done = DispatchSemaphore(value: 0)
    let code = Atomic<Int32>(0)
    init(daemon: Daemon) { self.daemon = daemon }
}
