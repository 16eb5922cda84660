import CareReports
import Foundation
import HTTPEndpoint
import MQTTTransport
import RuleLanguage
import StateStore
import Synchronization

import struct RuleEngine.PreparedUser

// The daemon's services, in the order `Daemon.run` starts them (see docs/architecture.md,
// "Concurrency (daemon)"); each is stopped in reverse.

/// An HTTP listener: the metrics and health endpoint, or the report listener (``HTTPRouter``,
/// bearer tokens, optional TLS, every exchange access-logged). Listens from the start (so it is
/// among the last to stop).
final class HTTPService: Service {
    let name: String
    private let address: String
    private let log: Logger
    private let serve: (_ address: String, _ connectionLimit: Int) throws(HTTPServerError) -> HTTPServer
    private var server: HTTPServer?

    /// The metrics and health listener: `handler` gets the method and path.
    init(address: String, log: Logger, handler: @escaping @Sendable (String, String) -> HTTPResponse) {
        self.name = "http"
        self.address = address
        self.log = log
        self.serve = { address, limit throws(HTTPServerError) in try HTTPServer(address: address, connectionLimit: limit, handler: handler) }
    }

    /// The report listener: `router`'s routes, over TLS when `tls` is given, each exchange
    /// logged as one `http access` line (see ``HTTPAccessRecord``).
    init(reportsAt address: String, tls: HTTPServer.TLS?, router: HTTPRouter, log: Logger) {
        self.name = "report http"
        self.address = address
        self.log = log
        self.serve = { address, limit throws(HTTPServerError) in
            try HTTPServer(address: address, tls: tls, connectionLimit: limit, router: router) { record in
                log.log(.info, "http access", pairs: record.fields)
            }
        }
    }

    /// The address it listens on, once started.
    var boundAddress: String? { server?.boundAddress }

    func start() throws {
        do {
            let limit = DescriptorLimit.httpConnections(limit: DescriptorLimit.raise(), wanted: HTTPServer.defaultConnectionLimit)
            server = try serve(address, limit)
        } catch {
            log.error(name == "http" ? "cannot serve metrics" : "cannot serve reports", ["address": address, "error": error.description])
            throw error
        }
    }

    func stop() { server?.stop() }
}

/// The publisher's stop: after the shards have drained, waits (at most 5 s) for the broker to
/// answer what was published, forgets those outputs, says `offline` and disconnects. It starts
/// nothing: the connection starts after the shards replayed the journal
/// (``PublisherConnectionService``), but must stop after the shards stopped.
final class PublisherService: Service {
    let name = "publisher"
    private let publisher: MQTTClient, sink: MQTTOutputSink, acks: PublishTracker
    private let statusTopic: String
    private let settle: @Sendable () -> Void
    /// The monotonic clock of the wait for the broker's acknowledgements.
    private let clock: DaemonClock
    private let log: Logger

    /// - Parameter settle: forgets the acknowledged outputs and parks the refused ones.
    init(
        publisher: MQTTClient, sink: MQTTOutputSink, acks: PublishTracker, statusTopic: String, clock: DaemonClock, log: Logger,
        settle: @escaping @Sendable () -> Void
    ) {
        self.clock = clock
        self.publisher = publisher
        self.sink = sink
        self.acks = acks
        self.statusTopic = statusTopic
        self.log = log
        self.settle = settle
    }

    func start() {}

    /// Waits (at most 5 s) for the broker to answer what is in flight — at most
    /// ``MQTTOutputSink/outputWindow`` outputs and the commit acknowledgements, which are not in
    /// the outbox and are published again meanwhile if their connection dropped — so that the
    /// outbox keeps only what was not delivered, while the publisher is connected. Outputs held
    /// back are not published now: they stay in the outbox for the next run, and a run stopped
    /// to hand its partitions over is not held up sending them. A disconnected publisher has
    /// nothing to wait for: the outputs it did not deliver stay in the outbox, and the commit
    /// acknowledgements go with this run (the gateway re-sends what they do not cover and the
    /// next owner acknowledges it).
    func stop() {
        sink.holdOutputs()
        let began = clock.uptimeNanoseconds()
        let deadline = began + 5_000_000_000
        let waiting = { [acks, sink, publisher] in publisher.isConnected && (acks.inFlight > 0 || sink.acknowledgementsUnanswered > 0) }
        while waiting(), clock.uptimeNanoseconds() < deadline {
            sink.retryAcknowledgements()
            usleep(10_000)
        }
        if waiting() {
            log.warn(
                "the broker did not answer every publish before the publisher stopped; the outputs among them stay in the outbox",
                [
                    "outputs_in_flight": String(acks.outputsInFlight), "acks_unanswered": String(sink.acknowledgementsUnanswered),
                    "waited_ms": String((clock.uptimeNanoseconds() &- began) / 1_000_000)
                ])
        }
        settle()
        try? publisher.publish(topic: statusTopic, "offline", retain: true)
        publisher.stop()
    }
}

/// The shards: restores each user's state into its shard, starts the shard threads and replays
/// what the journal holds beyond each user's committed position (every intact record, past damage
/// too). Stopping closes the queues, waits for the shards to finish what they hold, and records
/// the journal position they committed.
final class ShardsService: Service {
    let name = "shards"
    private let shards: [Shard]
    private let routing: ShardRouting
    private let reloadAfterRestore: Program?
    private var users: [StoredUser<PreparedUser>]
    private let outboxCount: Int
    private let journal: IngestJournal, storePath: String, log: Logger
    private let commitMark: JournalCommitMark?
    private let route: (String, UInt64, [UInt8]) -> Void
    private let dueReports: [(user: String, week: String)]

    /// - Parameter dueReports: weekly reports whose week closed before the last stop but were not
    ///   built yet; each user's shard builds them when it starts.
    /// - Parameter reloadAfterRestore: the current rules, when the state was restored into the
    ///   rules it was made with (a rule set changed across a restart): each shard reloads them
    ///   before it takes anything from the journal, as on SIGHUP.
    init(
        shards: [Shard], routing: ShardRouting, users: [StoredUser<PreparedUser>], reloadAfterRestore: Program? = nil, outboxCount: Int, journal: IngestJournal,
        commitMark: JournalCommitMark? = nil, storePath: String, dueReports: [(user: String, week: String)] = [], log: Logger,
        route: @escaping (String, UInt64, [UInt8]) -> Void
    ) {
        self.commitMark = commitMark
        self.shards = shards
        self.routing = routing
        self.dueReports = dueReports
        self.users = users
        self.reloadAfterRestore = reloadAfterRestore
        self.outboxCount = outboxCount
        self.journal = journal
        self.storePath = storePath
        self.log = log
        self.route = route
    }

    func start() {
        // Restoring aligns each state with the current rules (alert states by name, folded inputs
        // by identity), as a reload would. (Restoring the shards in parallel was measured slower:
        // 1.7–2.1 s instead of 1.2 s at 100 k users; the work is allocation, not arithmetic.)
        var users = self.users
        self.users = []
        let restoredUsers = users.count
        // Users are spread about evenly; a little room over the even share avoids a last doubling.
        let share = users.count / shards.count
        for shard in shards { shard.reserveUsers(share + share / 8 + 16) }
        for i in users.indices { shards[routing.shard(of: users[i].user)].restore(&users[i]) }  // moves each state
        if let p = reloadAfterRestore { for s in shards { s.queue.push(.reload(p)) } }
        for d in dueReports {
            guard let week = ISOWeek(parsing: d.week) else { continue }
            shards[routing.shard(of: d.user)].addDue(WeeklyReports.Due(user: d.user, week: week))
        }
        users = []
        shards.forEach { $0.start() }
        // Replay what the journal holds beyond each user's committed position.
        var replayed = 0
        IngestJournal.replay(journal.directory) { e in
            route(e.topic, e.seq, e.payload)
            replayed += 1
        }
        journal.markQueued(journal.lastSeq)
        log.info(
            "state restored",
            [
                "users": String(restoredUsers), "outbox": String(outboxCount),
                "journal_records": String(replayed), "store": storePath
            ])
    }

    func stop() {
        for s in shards { s.queue.close() }
        for s in shards { s.join() }
        // Each shard's last commit covered what it was given: the store records how far that
        // is, so the next start can tell a journal cut short from one that was not.
        commitMark?.advance(to: shards.map { $0.committedThrough.load(ordering: .relaxed) }.min() ?? 0)
    }
}

/// The publisher's connection, once the journal is replayed, then the outputs that were committed
/// but not acknowledged before the last stop. (``PublisherService`` stops it.)
final class PublisherConnectionService: Service {
    let name = "publisher connection"
    private let publisher: MQTTClient, sink: MQTTOutputSink, log: Logger
    private var outbox: [StateStore.OutboxItem]

    init(publisher: MQTTClient, sink: MQTTOutputSink, outbox: [StateStore.OutboxItem], log: Logger) {
        self.publisher = publisher
        self.sink = sink
        self.outbox = outbox
        self.log = log
    }

    func start() throws {
        do { try publisher.start() } catch {
            log.error("cannot start MQTT", ["error": error.description])
            throw error
        }
        if !outbox.isEmpty { _ = sink.publish(outbox) }
        outbox = []
    }

    func stop() {}
}

/// The subscriber's connection (the persistent session): stopping it stops reading; messages
/// already taken are journalled and queued.
final class SubscriberService: Service {
    let name = "subscriber"
    private let subscriber: MQTTClient, log: Logger

    init(subscriber: MQTTClient, log: Logger) {
        self.subscriber = subscriber
        self.log = log
    }

    func start() throws {
        do { try subscriber.start() } catch {
            log.error("cannot start MQTT", ["error": error.description])
            throw error
        }
    }

    func stop() { subscriber.stop() }
}

/// Runs `handler` on a serial queue of its own `delay` after a ``poke()``, once for all the pokes
/// that came before it started: work that follows events (broker answers), coalesced, without a
/// timer that wakes when nothing happened. Stopping waits for a run under way; nothing runs after.
final class DeferredTask: Service, Sendable {
    let name: String
    private let queue: DispatchQueue
    private let delay: DispatchTimeInterval
    private let handler: @Sendable () -> Void
    /// A run is scheduled and has not started.
    private let armed = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)

    init(name: String, label: String, delay: DispatchTimeInterval, handler: @escaping @Sendable () -> Void) {
        self.name = name
        self.queue = DispatchQueue(label: "mobilityd." + label)
        self.delay = delay
        self.handler = handler
    }

    func start() {}

    /// Schedules a run `delay` from now, unless one is scheduled and has not started.
    func poke() {
        guard !stopped.load(ordering: .relaxed), !armed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.asyncAfter(deadline: .now() + delay) { [self] in
            armed.store(false, ordering: .releasing)  // a poke from now on schedules another run
            guard !stopped.load(ordering: .acquiring) else { return }
            handler()
        }
    }

    func stop() {
        stopped.store(true, ordering: .releasing)
        queue.sync {}
    }
}

/// A repeating timer on its own serial queue, cancelled on stop.
final class TimerService: Service {
    let name: String
    private let label: String
    private let delay: DispatchTimeInterval, interval: DispatchTimeInterval
    private let handler: @Sendable () -> Void
    private var timer: DispatchSourceTimer?

    /// Fires `handler` after `delay`, then every `interval`, on a queue labelled `mobilityd.<label>`.
    init(name: String, label: String, delay: DispatchTimeInterval, interval: DispatchTimeInterval, handler: @escaping @Sendable () -> Void) {
        self.name = name
        self.label = label
        self.delay = delay
        self.interval = interval
        self.handler = handler
    }

    func start() {
        let t = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "mobilityd." + label))
        t.schedule(deadline: .now() + delay, repeating: interval)
        t.setEventHandler(handler: handler)
        t.resume()
        timer = t
    }

    func stop() { timer?.cancel() }
}

/// The service manager's timer (`WATCHDOG=1`, `STATUS=`), which takes over from the start-up
/// watchdog pings.
final class ServiceNotifierService: Service {
    let name = "service notifier"
    private let startTimer: () -> DispatchSourceTimer
    private let startupPings: DispatchSourceTimer?
    private var timer: DispatchSourceTimer?

    init(startupPings: DispatchSourceTimer?, startTimer: @escaping () -> DispatchSourceTimer) {
        self.startupPings = startupPings
        self.startTimer = startTimer
    }

    func start() {
        startupPings?.cancel()
        timer = startTimer()
    }

    func stop() { timer?.cancel() }
}

/// Signal handlers (SIGTERM, SIGINT: shut down; SIGHUP: reload): the one place where a signal
/// becomes a ``Termination`` request, for the daemon's ``ServiceGroup`` (its last service) and for
/// the ``PartitionSupervisor``. mobilityd blocks these signals in every thread from its first line
/// (``holdAtProcessStart()``); a thread of the service's own takes them with `sigwait` once it
/// starts, so a signal sent during start-up waits, pending, until the handlers run: never lost,
/// never fatal.
package final class SignalService: Service, Sendable {
    let name = "signals"
    private let handlers: [(Int32, @Sendable () -> Void)]
    private let running = Mutex<Taker?>(nil)

    /// The thread that takes the signals, and how it is told to end.
    private final class Taker: Sendable {
        let stopping = Atomic<Bool>(false)
        let ended = DispatchSemaphore(value: 0)
        let thread = Mutex<pthread_t?>(nil)
    }

    /// Handlers for `signals`: a shutdown signal is announced, then ends the run (`termination`,
    /// requested as by a signal); the reload signal calls its handler.
    init(_ signals: ServiceGroup.Signals, termination: Termination) {
        var handlers: [(Int32, @Sendable () -> Void)] = signals.shutdown.map { s in
            (
                s,
                { [announce = signals.announce] in
                    announce(s); termination.request(bySignal: true)
                }
            )
        }
        if let reload = signals.reload { handlers.append((reload.signal, reload.handler)) }
        for (s, _) in handlers { Self.holdUntilHandled(s) }
        self.handlers = handlers
    }

    func start() {
        guard !handlers.isEmpty else { return }
        let taker = Taker(), handlers = self.handlers
        let started = DispatchSemaphore(value: 0)
        ThreadName.thread("signals") {
            taker.thread.withLock { $0 = pthread_self() }
            var set = Self.set(of: handlers.map(\.0) + [Self.wake])
            // Blocked here too, for a process that did not block them at its start (tests).
            pthread_sigmask(SIG_BLOCK, &set, nil)
            started.signal()
            while true {
                var signal: Int32 = 0
                guard sigwait(&set, &signal) == 0 else { continue }
                if signal == Self.wake {
                    if taker.stopping.load(ordering: .acquiring) { break }
                    continue
                }
                handlers.first { $0.0 == signal }?.1()
            }
            taker.ended.signal()
        }.start()
        started.wait()
        running.withLock { $0 = taker }
    }

    /// Ends the taking thread and waits for it: a signal sent later waits for the next handlers
    /// (a partitioned instance's next run).
    func stop() {
        guard let taker = running.withLock({ $0 }) else { return }
        taker.stopping.store(true, ordering: .releasing)
        // Wakes the thread's sigwait with a signal of its own, sent to it alone: a handled signal
        // that arrives meanwhile is still handled, not taken for the wake.
        if let t = taker.thread.withLock({ $0 }) { pthread_kill(t, Self.wake) }
        running.withLock { $0 = nil }
        taker.ended.wait()
    }

    /// The thread that takes the signals while the service runs (tests send it a signal directly,
    /// as a process that did not block them at its start delivers them to any other thread).
    var takingThread: pthread_t? { running.withLock { $0?.thread.withLock { $0 } } }

    /// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread and so in every thread created
    /// after it: call first thing in `main`, before any thread exists. Until a ``SignalService``
    /// takes them they stay pending; none ends the process by its default action.
    package static func holdAtProcessStart() {
        var set = Self.set(of: [SIGTERM, SIGINT, SIGHUP])
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Keeps `signal` from ending the process by its default action where it is not blocked (a
    /// process that did not call ``holdAtProcessStart()``): a handler that does nothing, unless
    /// one is installed already. Not `SIG_IGN`, which would discard the signal while it is pending.
    static func holdUntilHandled(_ signal: Int32) {
        var current = sigaction()
        guard sigaction(signal, nil, &current) == 0, current.__sigaction_handler.sa_handler == nil else { return }  // SIG_DFL
        var quiet = sigaction()
        quiet.__sigaction_handler.sa_handler = { _ in }
        sigemptyset(&quiet.sa_mask)
        _ = sigaction(signal, &quiet, nil)
    }

    /// The real-time signal that wakes the taking thread to end (sent only to it, blocked there).
    private static let wake = __libc_current_sigrtmin() + 5

    private static func set(of signals: [Int32]) -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for s in signals { sigaddset(&set, s) }
        return set
    }
}
