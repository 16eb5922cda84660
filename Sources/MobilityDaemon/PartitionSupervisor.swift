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
package final class PartitionSupervisor: Sendable {
    private let config: DaemonConfiguration
    private let log: Logger
    private let wake = DispatchSemaphore(value: 0)
    private let terminating = Atomic<Bool>(false)
    private let current = Mutex<Daemon?>(nil)

    /// A supervisor for a configuration with ``DaemonConfiguration/partitioning`` and a PostgreSQL store.
    package init(configuration: DaemonConfiguration) {
        config = configuration
        log = Logger(format: configuration.logFormat, level: configuration.logLevel)
    }

    /// Runs until SIGTERM/SIGINT or a run fails; the process exit code.
    package func run() -> Int32 {
        guard let p = config.partitioning, case .postgres(let url) = config.store else { return 2 }
        for s in [SIGTERM, SIGINT, SIGHUP] { signal(s, SIG_IGN) }
        let signals = [SIGTERM, SIGINT].map { s in
            let src = DispatchSource.makeSignalSource(signal: s, queue: DispatchQueue(label: "mobilityd.supervisor.signals"))
            src.setEventHandler { [self] in
                terminating.store(true, ordering: .sequentiallyConsistent)
                current.withLock { $0 }?.requestStop()
                wake.signal()
            }
            src.resume()
            return src
        }
        defer { signals.forEach { $0.cancel() } }
        let owner = "\(config.instance)@\(ProcessInfo.processInfo.hostName) pid \(getpid())"
        let leases: PartitionLeases
        do { leases = try PartitionLeases(url: url, owner: owner, count: p.count, leaseMs: p.leaseMs) } catch {
            log.error("cannot open the partition leases", ["error": "\(error)"])
            return 1
        }
        let rule = PartitionOwnership(count: p.count)
        var held: [PartitionLeases.Lease] = []
        var run: Run?
        var lastRenewal = DispatchTime.now()
        var exitCode: Int32 = 0
        var beats = 0

        func stopRun() {
            guard let r = run else { return }
            r.daemon.requestStop()
            r.done.wait()
            current.withLock { $0 = nil }
            run = nil
        }

        while !terminating.load(ordering: .sequentiallyConsistent) {
            let sent = DispatchTime.now()
            do {
                let (live, kept) = try leases.heartbeat(holding: held)
                lastRenewal = sent
                beats += 1
                if Set(kept) != Set(held) {
                    log.warn(
                        "partition leases lost; stopping their processing",
                        ["lost": Set(held).subtracting(kept).map { String($0.partition) }.sorted().joined(separator: ",")])
                    stopRun()
                    held = kept
                }
                // The first beat only announces this instance, so that instances starting together
                // count each other before claiming.
                if beats > 1 {
                    switch rule.decide(held: held.map(\.partition), live: live) {
                    case .keep: break
                    case .release(let ps):
                        stopRun()
                        let gone = held.filter { ps.contains($0.partition) }
                        try leases.release(gone)
                        held.removeAll { ps.contains($0.partition) }
                        log.info("partitions released for a rebalance", ["partitions": ps.map(String.init).joined(separator: ","), "instances": String(live)])
                    case .claim(let n):
                        let got = try leases.claim(n)
                        if !got.isEmpty {
                            stopRun()
                            held = (held + got).sorted { $0.partition < $1.partition }
                            log.info(
                                "partitions claimed",
                                [
                                    "partitions": got.map { "\($0.partition)" }.joined(separator: ","),
                                    "tokens": got.map { "\($0.token)" }.joined(separator: ","),
                                    "instances": String(live)
                                ])
                        }
                    }
                }
            } catch {
                log.warn("partition heartbeat failed", ["error": "\(error)"])
                if run != nil, DispatchTime.now().uptimeNanoseconds - lastRenewal.uptimeNanoseconds >= UInt64(p.leaseMs) * 1_000_000 {
                    log.error("partition leases expired unrenewed; stopping their processing")
                    stopRun()
                    held = []
                }
            }
            if let r = run, r.done.wait(timeout: .now()) == .success {
                // The run ended by itself (a broker refusal, a store that cannot be read), or
                // because a commit was fenced: then heartbeat at once, to rejoin on what is left.
                exitCode = r.code.load(ordering: .relaxed)
                current.withLock { $0 = nil }
                run = nil
                if r.daemon.wasFenced, !terminating.load(ordering: .sequentiallyConsistent) {
                    exitCode = 0
                    continue
                }
                if r.daemon.stoppedBySignal || exitCode != 0 { break }
            }
            if run == nil, !held.isEmpty, !terminating.load(ordering: .sequentiallyConsistent) {
                let claim = PartitionClaim(count: p.count, leases: held.map { ($0.partition, $0.token) })
                let r = Run(daemon: Daemon(configuration: config, claimed: claim) { [wake] in wake.signal() })
                current.withLock { $0 = r.daemon }
                let t = Thread {
                    r.code.store(r.daemon.run(), ordering: .relaxed)
                    r.done.signal()
                }
                t.name = "mobilityd-run"
                t.start()
                run = r
                log.info("running on partitions", ["partitions": held.map { String($0.partition) }.joined(separator: ","), "of": String(p.count)])
            }
            _ = wake.wait(timeout: .now() + .milliseconds(p.heartbeatMs))
        }
        stopRun()
        if let r = run { exitCode = r.code.load(ordering: .relaxed) }
        try? leases.release(held)
        try? leases.leave()
        log.info("stopped", ["exit_code": String(exitCode)])
        return exitCode
    }
}

/// One run of the daemon on a set of partitions, on a thread of its own.
private final class Run: Sendable {
    let daemon: Daemon
    let done = DispatchSemaphore(value: 0)
    let code = Atomic<Int32>(0)
    init(daemon: Daemon) { self.daemon = daemon }
}
