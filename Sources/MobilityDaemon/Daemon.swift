import Foundation
import HTTPEndpoint
import Ingest
import MQTTTransport
import MobilityModel
import MobilityWire
import RuleEngine
import RuleLanguage
import StateStore
import Synchronization

/// `mobilityd`: wires the broker, the shards, the rules, metrics and signals together.
package final class Daemon: Sendable {
    let config: DaemonConfiguration
    let log: Logger
    let layout: TopicLayout
    /// What ends the run, and its exit code.
    let termination = Termination()
    /// The clocks the run reads (its shards, desks, timers, health and metrics).
    let clock: DaemonClock
    let started = Date()
    /// Whether the last WAL checkpoint succeeded (a failure is logged once, not every 50 ms).
    let checkpointHealthy = Atomic<Bool>(true)
    let notifier: ServiceNotifier
    /// The rules: loaded at start, reloaded on SIGHUP.
    let reloader: RuleReloader
    let readySent = Atomic<Bool>(false)
    /// Reconnections of a persistent session that the broker answered without its session.
    let sessionsLost = Atomic<Int>(0)
    /// Each connection's evictions by the broker (EvictionWatch.swift), by role.
    let evictionWatches = Mutex<[String: EvictionWatch]>([:])
    /// Which care teams each user belongs to (the mapping file, else the profile).
    package let careTeams: CareTeams
    /// The partition leases this run holds (`--partitions`; nil: every user is ours).
    let claimed: PartitionClaim?
    /// Called once when a commit of this run was fenced (partitioned input; the supervisor's wake-up).
    let onFenced: (@Sendable () -> Void)?
    /// Whether a commit of this run was fenced: another instance owns one of its partitions.
    let fenced = Atomic<Bool>(false)
    let storeUnavailable = Atomic<Bool>(false)
    /// Since when each partition session has been without a broker (the supervisor gives the
    /// leases up after a whole lease of it).
    let partitionLinks = PartitionLinks()
    /// What the state store and the ingest journal disagreed about or could not read at start,
    /// accepted by the operator (``DurableStateCheck``): the run is degraded while it has any.
    let stateFindings = Mutex<[DurableStateCheck.Finding]>([])

    /// Creates a daemon from its configuration; `claimed`: the leases it runs on (partitioned
    /// input, under a ``PartitionSupervisor``, which then owns SIGTERM and SIGINT); `onFenced`:
    /// called once when a commit is fenced (the run then stops by itself); `clock`: what it reads.
    package init(
        configuration: DaemonConfiguration, claimed: PartitionClaim? = nil, clock: DaemonClock = .system, onFenced: (@Sendable () -> Void)? = nil
    ) {
        self.clock = clock
        self.config = configuration
        self.claimed = claimed
        self.onFenced = onFenced
        self.log = Logger(format: configuration.logFormat, level: configuration.logLevel)
        self.layout = TopicLayout(root: configuration.topicRoot)
        self.notifier = ServiceNotifier()
        self.careTeams = CareTeams(assigned: configuration.careTeams)
        self.reloader = RuleReloader(rules: configuration.rules, log: log, notifier: notifier)
    }

    /// Runs until SIGTERM/SIGINT (or a fatal broker refusal). Returns the process exit code.
    package func run() -> Int32 {
        guard let program = reloader.load() else {
            log.error("rules are invalid; not starting", ["rules": config.rules])
            return 1
        }
        let broker: BrokerURL
        switch prepare(program) {
        case .run(let b): broker = b
        case .exit(let code): return code
        }
        reloader.started(with: program)
        // SIGTERM and SIGINT from here (under the partition supervisor, its own): a stop asked for
        // during start-up ends a wait for the store at once, or the run as soon as it has started.
        let shutdownSignals =
            claimed == nil
            ? SignalService(.init(shutdown: [SIGTERM, SIGINT], announce: { [self] s in announceShutdown(by: s) }, reload: nil), termination: termination)
            : nil
        shutdownSignals?.start()
        defer { shutdownSignals?.stop() }
        // A PostgreSQL store that does not answer yet is waited for (under the partition
        // supervisor, it waited); the service manager is told so and its watchdog kept pinged.
        var waitsForStore: String?
        if claimed == nil, case .postgres(let url) = config.store { waitsForStore = url }
        notifier.status(waitsForStore == nil ? "restoring state" : "connecting to the PostgreSQL state store")
        let startupPings = notifier.pingDuringStartup()
        defer { startupPings?.cancel() }
        if let url = waitsForStore {
            guard StoreReachability(log: log).waitUntilReachable(url, termination: termination) else { return 0 }
            notifier.status("restoring state")
        }
        // Durable state: the store (SQLite, or PostgreSQL: Daemon+Store.swift) and the ingest
        // journal, checked against each other (Daemon+DurableState.swift).
        let state: RestoredState
        switch restoreState(current: program) {
        case .ready(let s): state = s
        case .refused(let code): return code
        case .storeUnavailable: return noteStoreUnavailable()
        }
        stateFindings.withLock { $0 = state.findings }
        // SIGHUP waits for the service group's handler (blocked since the process started); where
        // it is not blocked it must not end the process by its default action (a reload must
        // never kill mobilityd).
        SignalService.holdUntilHandled(SIGHUP)
        try? state.store.setMeta("rules_identity", program.identity)
        try? state.store.setMeta("rules_sources", reloader.storedSources)
        let c: Components
        do { c = try components(program: program, broker: broker, state: state) } catch {
            return error.store?.isUnavailable == true ? noteStoreUnavailable() : 1
        }
        let metrics = metricsListener(c), reports = reportListener(c), flush = ackFlush(c)
        // Poked by answers from the publisher connection's start on: stopped however the group ends
        // (the group stops only the services it started).
        defer { flush.stop() }
        // In dependency order (Daemon+Services.swift). Stopped in reverse, which is the drain: stop
        // the signal handlers and timers, stop reading (messages already taken are queued), finish
        // the queues, wait for the broker's acknowledgements, say offline, stop serving metrics.
        let services: [(any Service)?] = [
            metrics, reports,
            checkpointTimer(c),
            PublisherService(publisher: c.publisher, sink: c.sink, acks: c.acks, statusTopic: layout.status(config.instance), clock: clock, log: log) {
                [self] in
                settleOutputs(c)
            },
            flush,  // poked by the publisher's answers: stopped before the publisher's last flush
            shardsService(c, state: state),
            PublisherConnectionService(publisher: c.publisher, sink: c.sink, outbox: state.outbox, log: log),
            c.stage,  // stopped after the subscriber (it drains into the shards), before the shards
            SubscriberService(subscriber: c.subscriber, log: log),
            c.partitionInput,
            ticker(c), silenceTimer(c), housekeepingTimer(c, flush: flush), highWaterTimer(c),
            ServiceNotifierService(startupPings: startupPings) { [self] in startServiceTimer(notifier, c) }
        ]
        let group = ServiceGroup(services.compactMap { $0 }, signals: signals(c), termination: termination, log: log, clock: clock)
        // The failing service logged why; the started ones are stopped. A metrics port still held
        // (by the instance stopping before this one) may free itself: 75 (EX_TEMPFAIL), which the
        // unit restarts; a TLS certificate or key libmicrohttpd refuses is a configuration error:
        // 2; everything else is 1, which the unit does not restart.
        do { try group.run { logStarted(c, metrics: metrics, reports: reports) } } catch let e as HTTPServerError {
            return e.code == .cannotListen ? 75 : 2
        } catch { return 1 }
        // The services whose stop took a second or more: what a slow stop waited for.
        let slow = group.slowStops(atLeast: 1000)
        log.info("stopped", ["exit_code": String(termination.exitCode), "slow_stops": slow.isEmpty ? "none" : slow])
        return termination.exitCode
    }

    /// What `run` does after checking the configuration: run against this broker, or exit now.
    enum Preparation {
        case run(BrokerURL)
        case exit(Int32)
    }

    /// Checks what can be checked before any state is touched (the broker URL; `--check-config`
    /// stops there) and prepares the state directory.
    func prepare(_ program: Program) -> Preparation {
        let broker: BrokerURL
        do { broker = try BrokerURL.list(parsing: config.broker)[0] } catch {
            log.error("bad broker URL", ["error": error.description])
            return .exit(2)
        }
        if let first = config.partitioning?.natsURLs.first, let natsHost = URLComponents(string: first)?.host, natsHost != broker.host {
            // The NATS connection tries the --nats URLs in order: the first is the node that
            // carries the JetStream intake's data, and should be the node of --broker.
            log.warn(
                "the first --nats URL is not on the --broker host: list this instance's own node first, the node of its --broker",
                ["nats": first, "broker_host": broker.host])
        }
        if config.mqttVersion == .v311, config.username != nil {
            // An authenticating broker has an ACL; under 3.1.1 a publish it denies looks delivered.
            log.warn(
                "under MQTT 3.1.1 a publish the broker refuses cannot be seen: an output its ACL denies is lost without a trace; use --mqtt-version 5 where the broker speaks it"
            )
        }
        if config.checkConfig {
            print(
                "configuration ok: \(program.alerts.count) alerts, \(program.series.count) series, broker \(config.brokerNames), clock \(config.clock.rawValue)"
            )
            return .exit(0)
        }
        // 0700 whatever the umask; a looser directory (an older version's) is tightened, and said so.
        do {
            if try PrivateFiles.prepareDirectory(config.state) {
                log.warn("state directory was accessible to group or others; tightened to 0700", ["state": config.state])
            }
        } catch {
            log.error("cannot create state directory", ["state": config.state, "error": error.description])
            return .exit(1)
        }
        return .run(broker)
    }

    /// The `started` log line, once every service started.
    private func logStarted(_ c: Components, metrics: HTTPService?, reports: HTTPService?) {
        log.info(
            "started",
            [
                "broker": config.brokerNames, "client_id": c.clientID, "clock": config.clock.rawValue,
                "shards": String(c.shards.count),
                "rules": config.rules, "alerts": String(c.program.alerts.count), "rules_identity": c.program.identity,
                "metrics": metrics?.boundAddress ?? "off",
                "http": reports?.boundAddress.map { (config.httpTLS == nil ? "http://" : "https://") + $0 } ?? "off"
            ])
    }

    /// Stops the run as SIGTERM would, without being a signal (a partition rebalance, the
    /// supervisor's own shutdown).
    package func requestStop() { termination.request() }

    /// Refused publishes by kind and reason, and the dead letters parked in the store.
    let refusals = Mutex<(counts: [RefusalKey: Int], deadLetters: Int)>(([:], 0))
    struct RefusalKey: Hashable, Comparable {
        var kind: String, reason: String
        static func < (a: Self, b: Self) -> Bool { (a.kind, a.reason) < (b.kind, b.reason) }
    }

    /// Counts refused publishes, logs the first of each kind and reason, and parks the outbox
    /// items among them as dead letters, so that one output the broker will never take (an ACL
    /// that denies its topic) neither blocks the others nor is retried forever.
    func park(_ refused: [Refusal], store: any StateBackend, acks: PublishTracker) {
        let items = refused.compactMap { r in r.outboxID.map { (id: $0, reason: r.reason) } }
        var parked: Int?
        if !items.isEmpty {
            do { parked = try store.park(items, at: clock.wall().milliseconds) } catch {
                log.error("cannot park refused outputs; retrying", ["error": "\(error)"])
                acks.restoreRefused(refused)
                return
            }
        }
        let firsts = refusals.withLock { state -> [Refusal] in
            if let parked { state.deadLetters = parked }
            var firsts: [Refusal] = []
            for r in refused {
                let key = RefusalKey(kind: r.kind.rawValue, reason: r.reason)
                if state.counts[key] == nil { firsts.append(r) }
                state.counts[key, default: 0] += 1
            }
            return firsts
        }
        for r in firsts {
            log.error(
                r.outboxID == nil ? "broker refused an output" : "broker refused an output; parked as a dead letter",
                [
                    "kind": r.kind.rawValue, "reason": r.reason,
                    "note": "logged once per kind and reason; see mobilityd_publish_refused_total and mobilityd_dead_letters"
                ])
        }
    }

    /// mosquitto's `$SYS` counter of publishes it dropped because of `max_queued_messages` /
    /// `max_inflight_messages` (messages its clients were told were delivered).
    static let brokerDroppedTopic = "$SYS/broker/publish/messages/dropped"
    /// The broker's drop count as last reported (-1: never reported).
    let brokerDropped = Atomic<Int64>(-1)

    /// A `$SYS` message: records the broker's drop counter and warns when it grows.
    func brokerReported(_ topic: String, _ payload: [UInt8]) {
        guard topic == Daemon.brokerDroppedTopic, let n = Int64(String(decoding: payload, as: UTF8.self)) else { return }
        let before = brokerDropped.exchange(n, ordering: .relaxed)
        if n > max(before, 0) {
            log.warn(
                "the broker dropped messages: they were acknowledged to their publishers but never delivered",
                [
                    "dropped_total": String(n), "since_last_report": String(before < 0 ? n : n - before),
                    "remedy":
                        "lift the broker's max_queued_messages (deploy/mosquitto.conf); gateways re-send what users/{u}/acks does not cover (docs/mqtt-api.md)"
                ])
        }
    }

    /// The wall clock (silences and command times).
    static func wallNow() -> Timestamp { Timestamp(milliseconds: Int64(Date().timeIntervalSince1970 * 1000)) }

    func applyCommon(_ c: inout MQTTClientConfiguration) {
        c.protocolVersion = config.mqttVersion
        c.username = config.username
        c.password = config.password
        c.caFile = config.caFile
        c.certFile = config.certFile
        c.keyFile = config.keyFile
        c.fallbacks = Array(config.brokers.dropFirst())
    }

    func connectionEvent(_ e: MQTTConnectionEvent, role: String) {
        switch e {
        case .connected(_, let sessionLost, let broker):
            log.info("broker connected", ["role": role, "broker": broker.description])
            let now = clock.uptimeNanoseconds()
            _ = evictionWatches.withLock { $0[role, default: EvictionWatch()].connected(now: now, sessionLost: sessionLost) }
            // The subscriber and the partition sessions keep a session at the broker (clean
            // session off), which holds what is published while they are away; the publisher's
            // is clean. A reconnect that finds none: the broker lost or expired it.
            if sessionLost {
                sessionsLost.add(1, ordering: .relaxed)
                log.warn(
                    "the broker kept no session for this connection: inputs published while it was disconnected are lost to mobilityd (the broker lost or expired its session)",
                    ["role": role])
            }
        case .subscribed:
            // Ready once the broker has answered the subscriptions (state is restored and metrics
            // listen by then): units ordered after mobilityd start when it consumes.
            if role == "subscriber", !readySent.exchange(true, ordering: .relaxed) {
                notifier.ready(status: "running: subscribed, \(shardRouting.count) shards")
            }
        case .disconnected(let reason):
            log.log(reason == "requested" ? .info : .warn, "broker disconnected", ["role": role, "reason": reason])
            let now = clock.uptimeNanoseconds()
            let action = evictionWatches.withLock { $0[role, default: EvictionWatch()].disconnected(now: now, requested: reason == "requested") }
            if case .loopStarted(let inARow, let lost) = action {
                log.error(
                    "the broker closes this connection right after each connect: another connection uses its client id; /healthz fails until it stays up",
                    [
                        "role": role, "evictions_in_a_row": String(inARow), "sessions_lost": String(lost),
                        "remedy":
                            "give each connection an account of its own (--publisher-username) where the broker binds client ids to usernames, and run one daemon per --client-id; inputs the broker queued in a wiped session are lost to mobilityd (gateways re-send what users/{u}/acks does not cover)"
                    ])
            }
        case .refused(let err):
            log.error("broker refused the connection; giving up", ["role": role, "error": err.description])
            notifier.stopping(status: "stopping: the broker refused the connection")
            termination.request(exitCode: 1)
        }
    }

    /// Which shard holds a user: by partition in a partitioned run, by a hash of the id otherwise.
    var shardRouting: ShardRouting {
        claimed.map { ShardRouting(partitions: $0.partitions, shards: config.shards) } ?? ShardRouting(shards: config.shards)
    }
}
