import Foundation
import MobilityModel
import StateStore

// The services `Daemon.run` lists, made from the run's components (see docs/architecture.md,
// "Concurrency (daemon)"; the service types are in DaemonServices.swift).
extension Daemon {
    /// The metrics and health listener (`--metrics-address`; nil: off).
    func metricsListener(_ c: Components) -> HTTPService? {
        config.metricsAddress.map { addr in HTTPService(address: addr, log: log) { [self] _, path in http(path: path, c) } }
    }

    /// The report listener (`--http-address`; nil: off).
    func reportListener(_ c: Components) -> HTTPService? {
        guard let addr = config.httpAddress else { return nil }
        let deliver: @Sendable (TimelineRequest) -> Void = { r in c.stage.deliver(.timeline(r), to: c.routing.shard(of: r.command.user)) }
        let console = ConsoleDesks(
            store: c.store, acknowledgements: c.desk, silences: c.silences, timelines: c.timelines,
            deliverAcknowledgement: { a, receipt in c.stage.deliver(.acknowledge(a, taken: receipt), to: c.routing.shard(of: a.user)) },
            deliverTimeline: deliver, clinicalKinds: { [reloader] in reloader.timelineKinds.clinical }, now: { [clock] in clock.wall() })
        let router = reportRouter(
            shards: c.shards, store: c.store, timelines: c.timelines, sessions: c.consoleSessions, console: console, deliver: deliver)
        return HTTPService(reportsAt: addr, tls: config.httpTLS, router: router, log: log)
    }

    /// WAL → database file on a timer's thread, not inside a shard's commit; started before the
    /// shards (their journal replay commits too) and stopped after them (so does their drain).
    /// Every 50 ms: each pass then syncs what 50 ms of commits wrote, and the commits that append
    /// to the WAL meanwhile wait less for it (every 500 ms: stalls of 3–25 ms; every 100 ms: alert
    /// latency p99 0.9–1.5 ms; every 50 ms: 0.7–0.8 ms; docs/benchmarks.md). With nothing
    /// committed a pass only reads the WAL's header. Nil for a store that checkpoints itself
    /// (PostgreSQL): the timer would wake twenty times a second for nothing.
    func checkpointTimer(_ c: Components) -> TimerService? {
        let log = log, store = c.store
        guard store.needsCheckpoints else { return nil }
        return TimerService(name: "checkpoint", label: "checkpoint", delay: .milliseconds(100), interval: .milliseconds(50)) { [self] in
            do {
                try store.checkpoint()
                if !checkpointHealthy.exchange(true, ordering: .relaxed) { log.info("state checkpoint works again") }
            } catch {
                if checkpointHealthy.exchange(false, ordering: .relaxed) { log.warn("state checkpoint failed", ["error": "\(error)"]) }
            }
        }
    }

    /// Forgets acknowledged outputs and parks refused ones: 20 ms after a broker answer leaves
    /// any (``ackFlush(_:)``), and once more when the publisher stops (a refusal that arrives
    /// while draining is parked too).
    func settleOutputs(_ c: Components) {
        let ids = c.acks.drain()
        if !ids.isEmpty { do { try c.store.acknowledge(ids) } catch { c.acks.restore(ids) } }
        let refused = c.acks.drainRefused()
        if !refused.isEmpty { park(refused, store: c.store, acks: c.acks) }
    }

    /// The shards, with the restored users, the weeks due and the journal to replay.
    func shardsService(_ c: Components, state: RestoredState) -> ShardsService {
        let layout = layout, shards = c.shards, routing = c.routing
        return ShardsService(
            shards: shards, routing: routing, users: state.users, reloadAfterRestore: state.program.identity == c.program.identity ? nil : c.program,
            outboxCount: state.outbox.count, journal: c.journal, commitMark: c.commitMark,
            storePath: c.store.location, dueReports: (try? c.store.dueReports()) ?? [], log: log,
            // The journal's replay: each record straight to its user's shard, with the topic's parse.
            route: { topic, seq, payload in
                let parsed = layout.parse(topic)
                shards[routing.shard(of: parsed)].queue.push(.message(seq: seq, topic: topic, parsed: parsed, payload: payload))
            })
    }

    /// The wall clock's ticks to every shard (`--clock wall`; nil: event time needs none).
    func ticker(_ c: Components) -> TimerService? {
        guard config.clock == .wall else { return nil }
        let clock = clock
        return TimerService(name: "ticker", label: "tick", delay: .seconds(1), interval: .seconds(config.tickSeconds)) {
            let now = clock.wall()
            for i in c.shards.indices { c.stage.deliver(.tick(now), to: i) }
        }
    }

    /// Silences end by the wall clock, in both clock modes.
    func silenceTimer(_ c: Components) -> TimerService {
        let clock = clock
        return TimerService(name: "silences", label: "silences", delay: .milliseconds(200), interval: .seconds(1)) { c.silences.tick(now: clock.wall()) }
    }

    /// Housekeeping: commit acknowledgements and retries, release journal segments every shard
    /// has committed, and answered outputs (acknowledged or refused) the store did not take the
    /// last time (`flush`).
    func housekeepingTimer(_ c: Components, flush: DeferredTask) -> TimerService {
        TimerService(name: "housekeeping", label: "housekeeping", delay: .milliseconds(500), interval: .milliseconds(500)) {
            if c.acks.hasAnsweredOutputs { flush.poke() }
            if c.sink.backlog > 0 { _ = c.sink.publish([]) }
            c.sink.retryAcknowledgements()
            for s in c.shards { s.queue.push(.housekeeping) }
            if let mark = c.commitMark { mark.advance(to: c.shards.map { $0.committedThrough.load(ordering: .relaxed) }.min() ?? 0) }
        }
    }

    /// The journal's high-water mark, off the append path: a journal found cut below it at the
    /// next start is refused, even past what the store committed (IngestJournal.recordHighWater).
    /// Nil for partitioned input, which has no journal.
    func highWaterTimer(_ c: Components) -> TimerService? {
        guard claimed == nil else { return nil }
        return TimerService(name: "journal high water", label: "high-water", delay: .milliseconds(10), interval: .milliseconds(10)) {
            c.journal.recordHighWater()
        }
    }

    /// Forget acknowledged outputs quickly: the window in which a crash re-publishes an output the
    /// broker already has is the time between its acknowledgement and this deletion (20 ms, all
    /// the answers of those 20 ms in one deletion; after a deletion the store refused, the next
    /// answer's or housekeeping's, within 500 ms). Woken by the answers, not a timer: an instance
    /// with nothing to publish does not wake fifty times a second.
    func ackFlush(_ c: Components) -> DeferredTask {
        let flush = DeferredTask(name: "ack flush", label: "acks", delay: .milliseconds(20)) { [self] in settleOutputs(c) }
        c.acks.whenOutputsAnswered { [weak flush] in flush?.poke() }
        return flush
    }

    /// SIGHUP reloads the rules. (SIGTERM and SIGINT are taken from the start of the run, before
    /// the group exists: `Daemon.run`, or under a ``PartitionSupervisor`` the supervisor's.)
    func signals(_ c: Components) -> ServiceGroup.Signals {
        ServiceGroup.Signals(
            shutdown: [],
            announce: { [self] s in announceShutdown(by: s) },
            reload: (
                SIGHUP,
                { [self] in
                    guard
                        let identity = reloader.reload(
                            notify: readySent.load(ordering: .relaxed), deliver: { p in for i in c.shards.indices { c.stage.deliver(.reload(p), to: i) } })
                    else { return }
                    try? c.store.setMeta("rules_identity", identity)
                    try? c.store.setMeta("rules_sources", reloader.storedSources)
                }
            ))
    }

    /// Says that `signal` (SIGTERM or SIGINT) ends the run: a log line, the service manager's status.
    func announceShutdown(by signal: Int32) {
        log.info("shutting down", ["signal": signal == SIGTERM ? "SIGTERM" : "SIGINT"])
        notifier.stopping(status: "stopping: draining the shard queues")
    }
}
