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
    private let shutdown = DispatchSemaphore(value: 0)
    private let exitCode = Atomic<Int32>(0)
    private let started = Date()
    let journalHealthy = Atomic<Bool>(true)
    /// Whether the last WAL checkpoint succeeded (a failure is logged once, not every 50 ms).
    let checkpointHealthy = Atomic<Bool>(true)
    let notifier: ServiceNotifier
    /// The rules: loaded at start, reloaded on SIGHUP.
    let reloader: RuleReloader
    private let readySent = Atomic<Bool>(false)
    /// Reconnections of a persistent session that the broker answered without its session.
    let sessionsLost = Atomic<Int>(0)
    /// Each connection's evictions by the broker (EvictionWatch.swift), by role.
    let evictionWatches = Mutex<[String: EvictionWatch]>([:])
    private let stopping = Atomic<Bool>(false)
    /// Which care teams each user belongs to (the mapping file, else the profile).
    package let careTeams: CareTeams
    /// The partition leases this run holds (`--partitions`; nil: every user is ours).
    let claimed: PartitionClaim?
    /// Called once when a commit of this run was fenced (partitioned input; the supervisor's wake-up).
    let onFenced: (@Sendable () -> Void)?
    /// Whether a commit of this run was fenced: another instance owns one of its partitions.
    let fenced = Atomic<Bool>(false)
    /// What the state store and the ingest journal disagreed about or could not read at start,
    /// accepted by the operator (``DurableStateCheck``): the run is degraded while it has any.
    let stateFindings = Mutex<[DurableStateCheck.Finding]>([])

    /// Creates a daemon from its configuration; `claimed`: the leases it runs on (partitioned
    /// input); `onFenced`: called once when a commit is fenced (the run then stops by itself).
    package init(configuration: DaemonConfiguration, claimed: PartitionClaim? = nil, onFenced: (@Sendable () -> Void)? = nil) {
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
        do { broker = try BrokerURL(parsing: config.broker) } catch {
            log.error("bad broker URL", ["error": error.description])
            return 2
        }
        if config.mqttVersion == .v311, config.username != nil {
            // An authenticating broker has an ACL; under 3.1.1 a publish it denies looks delivered.
            log.warn(
                "under MQTT 3.1.1 a publish the broker refuses cannot be seen: an output its ACL denies is lost without a trace; use --mqtt-version 5 where the broker speaks it"
            )
        }
        if config.checkConfig {
            print("configuration ok: \(program.alerts.count) alerts, \(program.series.count) series, broker \(broker), clock \(config.clock.rawValue)")
            return 0
        }
        // 0700 whatever the umask; a looser directory (an older version's) is tightened, and said so.
        do {
            if try PrivateFiles.prepareDirectory(config.state) {
                log.warn("state directory was accessible to group or others; tightened to 0700", ["state": config.state])
            }
        } catch {
            log.error("cannot create state directory", ["state": config.state, "error": error.description])
            return 1
        }
        reloader.started(with: program)
        notifier.status("restoring state")
        let startupPings = notifier.pingDuringStartup()
        defer { startupPings?.cancel() }
        let clientID = config.clientID ?? "mobilityd-\(config.instance)"
        let statusTopic = layout.status(config.instance)

        // Durable state: the store (SQLite, or PostgreSQL: Daemon+Store.swift) and the ingest
        // journal, checked against each other (Daemon+DurableState.swift).
        let state: RestoredState
        switch restoreState(current: program) {
        case .ready(let s): state = s
        case .refused(let code): return code
        }
        let store = state.store, journal = state.journal, restoreProgram = state.program
        let restored = (users: state.users, outbox: state.outbox)
        stateFindings.withLock { $0 = state.findings }
        // Partitioned input is not journalled: nothing to release or record.
        let mark = claimed == nil ? JournalCommitMark(journal: journal, store: store, recorded: state.committedThrough, log: log) : nil
        try? store.setMeta("rules_identity", program.identity)
        try? store.setMeta("rules_sources", reloader.storedSources)

        // Signals first, so none is lost during start-up (the signal service handles them last).
        for s in [SIGTERM, SIGINT, SIGHUP] { SignalService.holdUntilHandled(s) }

        // The publisher: its own connection (clean session), carrying the status and the last will.
        let acks = AckTracker()
        var pubConfig = MQTTClientConfiguration(broker: broker, clientID: clientID + "-pub")
        applyCommon(&pubConfig)
        if let u = config.publisherUsername { pubConfig.username = u }
        pubConfig.cleanSession = true
        pubConfig.will = (statusTopic, Array("offline".utf8), true)
        let publisher: MQTTClient
        do {
            publisher = try MQTTClient(
                pubConfig, onMessage: { _, _ in },
                onEvent: { [self] e in
                    connectionEvent(e, role: "publisher")
                    if case .connected = e, let p = publisherRef.value,
                        let mid = try? p.publish(topic: statusTopic, payload: Array("online".utf8), retain: true)
                    {
                        acks.published(mid: mid, id: nil, topic: statusTopic)
                    }
                }, onPublished: { mid, reason in acks.answered(mid: mid, reasonCode: reason) })
        } catch {
            log.error("cannot create MQTT publisher", ["error": error.description])
            return 1
        }
        publisherRef.set(publisher)

        let layout = self.layout
        let sink = MQTTOutputSink(client: publisher, acks: acks)
        var decoder = WireDecoder()
        decoder.maxPayloadBytes = config.maxPayloadBytes
        let shards = (0..<config.shards).map { i in
            Shard(
                index: i,
                ingestor: Ingestor(
                    engine: Engine(program: restoreProgram, configuration: config.engine), layout: layout,
                    decoder: decoder, clock: config.clock, boundedByWallClock: true),
                capacity: config.queueCapacity, sink: sink, store: store, journal: claimed == nil ? journal : nil, acks: acks, log: log,
                ackIntervalMs: config.ackIntervalMs, commitIntervalMs: config.commitIntervalMs,
                historyDays: config.historyDays, publishesSeries: config.publishSeries, careTeams: careTeams, fhir: config.fhir,
                acknowledge: { user, lastID in
                    sink.publishUntracked(topic: layout.acks(user), payload: AckPayload.bytes(user: user, lastID: lastID), retain: true)
                })
        }
        let scope = CommandScope(partitions: claimed?.partitions)  // which commands this run answers
        let desk = AcknowledgementDesk(layout: layout, store: store, sink: sink, teams: careTeams, log: log, scope: scope) {
            sink.publishUntracked(topic: $0, payload: $1, retain: false)
        }
        do { try desk.restore() } catch { log.error("cannot read the acknowledgements", ["error": "\(error)"]); return 1 }
        for s in shards { s.desk = desk }
        let silences = SilenceDesk(
            layout: layout, store: store, sink: sink, teams: careTeams, log: log, scope: scope, labelNames: { [reloader] in reloader.labelNames },
            publishNow: { sink.publishUntracked(topic: $0, payload: $1, retain: false) })
        do { try silences.restore() } catch { log.error("cannot read the silences", ["error": "\(error)"]); return 1 }
        for s in shards { s.silences = silences }
        let timelines = TimelineDesk(layout: layout, teams: careTeams, log: log, scope: scope) {
            sink.publishUntracked(topic: $0, payload: $1, retain: false)
        }
        for s in shards { s.timelines = timelines }
        timelinesRef.set(timelines)
        if claimed != nil { for s in shards { s.onFenced = { [self] in commitFenced() } } }
        silencesRef.set(silences)
        let count = UInt64(shards.count)
        /// The shard of a parsed topic: its user's (shard 0 for a topic that names no user).
        @Sendable func shard(of parsed: TopicLayout.Parsed) -> Int { Daemon.shard(of: parsed, count: count) }
        /// Parses a topic once and routes it straight to its user's shard, with the parse for the
        /// shard to reuse (the journal's replay at start; live messages go through `stage`).
        @Sendable func route(_ topic: String, seq: UInt64, payload: [UInt8]) {
            let parsed = layout.parse(topic)
            shards[shard(of: parsed)].queue.push(.message(seq: seq, topic: topic, parsed: parsed, payload: payload))
        }
        // Large samples payloads are decoded on a thread of their own, in order (DecodeStage.swift).
        let stage = DecodeStage(
            shards: shards.map(\.queue), decoder: decoder, capacity: config.queueCapacity, threshold: DecodeStage.threshold(shards: shards.count)
        ) { journal.markQueued($0) }
        stageRef.set(stage)

        // The subscriber: the persistent session (fixed client id, clean session off, QoS 1).
        var subConfig = MQTTClientConfiguration(broker: broker, clientID: clientID)
        applyCommon(&subConfig)
        subConfig.cleanSession = false
        // MQTT 5: a retained input keeps its flag when forwarded live, so it is refused the first time too.
        subConfig.retainAsPublished = true
        // mosquitto's count of messages it dropped for its queue limits (it says nothing else).
        subConfig.subscriptions = layout.subscriptions + [Daemon.brokerDroppedTopic, desk.subscription, silences.subscription, timelines.subscription]
        // Inputs come through the partition sessions; every instance takes the commands (CommandScope).
        if claimed != nil { subConfig.subscriptions = [desk.subscription, silences.subscription, timelines.subscription] }
        // A payload the decoder would reject for its size is neither copied nor journalled.
        subConfig.maxIncomingPayloadBytes = config.maxPayloadBytes
        let subscriber: MQTTClient
        do {
            subscriber = try MQTTClient(
                subConfig,
                onMessage: { [self] topic, payload in
                    if topic.utf8.first == UInt8(ascii: "$") { brokerReported(topic, payload); return }
                    if silences.commandTeam(topic) != nil { silences.received(topic: topic, payload: payload, now: Daemon.wallNow()); return }
                    if timelines.commandTeam(topic) != nil {  // committed (or refused) by its user's shard before it is acknowledged, not journalled
                        timelines.received(topic: topic, payload: payload) { r in
                            stage.deliver(.timeline(r), to: Int(Daemon.hash(r.command.user) % count))
                            _ = r.answer.wait(seconds: TimelineDesk.answerSeconds)
                        }
                        return
                    }
                    if desk.commandTeam(topic) != nil {  // a command: taken by its user's shard before it is acknowledged, not journalled
                        desk.received(topic: topic, payload: payload) { c in
                            let taken = DispatchSemaphore(value: 0)
                            stage.deliver(.acknowledge(c, taken: taken), to: Int(Daemon.hash(c.user) % count))
                            _ = taken.wait(timeout: .now() + 10)
                        }
                        return
                    }
                    // Journal it before returning (libmosquitto acknowledges after we return), then hand
                    // it to its user's shard. A refused write blocks here: no acknowledgement, no loss.
                    var seq: UInt64 = 0
                    while true {
                        do {
                            seq = try journal.append(topic: topic, payload: payload)
                            if !journalHealthy.exchange(true, ordering: .relaxed) { log.info("journal writable again") }
                            break
                        } catch {
                            if journalHealthy.exchange(false, ordering: .relaxed) {
                                log.error("cannot journal an incoming message; not acknowledging until the disk accepts it", ["error": "\(error)"])
                            }
                            if stopping.load(ordering: .relaxed) { return }
                            usleep(200_000)
                        }
                    }
                    let parsed = layout.parse(topic)
                    stage.route(seq: seq, topic: topic, parsed: parsed, payload: payload, to: shard(of: parsed))  // and marks it queued
                }, onEvent: { [self] e in connectionEvent(e, role: "subscriber") },
                onOversized: { topic, size in
                    if desk.commandTeam(topic) != nil { desk.oversized(topic: topic, size: size); return }
                    if silences.commandTeam(topic) != nil { silences.oversized(topic: topic, size: size); return }
                    if timelines.commandTeam(topic) != nil { timelines.oversized(topic: topic, size: size); return }
                    let parsed = layout.parse(topic)
                    stage.deliver(.oversized(topic: topic, parsed: parsed, size: size), to: shard(of: parsed))
                },
                onRetained: { topic, size in
                    // Only a profile may be retained: the broker delivers a retained message again on
                    // every reconnect, and a retained deletion or retraction would undo later data; a
                    // retained staff command would be applied again (an empty one only clears it).
                    if desk.commandTeam(topic) != nil { if size > 0 { desk.retained(topic: topic) }; return true }
                    if silences.commandTeam(topic) != nil { if size > 0 { silences.retained(topic: topic) }; return true }
                    if timelines.commandTeam(topic) != nil { if size > 0 { timelines.retained(topic: topic) }; return true }
                    let parsed = layout.parse(topic)
                    guard case .inbound(_, let kind) = parsed, kind != .profile else { return false }
                    // An empty retained message clears a retained one: nothing to apply or refuse.
                    if size > 0 { stage.deliver(.retained(topic: topic, parsed: parsed), to: shard(of: parsed)) }
                    return true
                })
        } catch {
            log.error("cannot create MQTT subscriber", ["error": error.description])
            return 1
        }
        healthSources.set(HealthSources(shards: shards, sink: sink, desk: desk))

        // The services, in dependency order; stopped in reverse, which is the drain: stop the
        // signal handlers and timers, stop reading (messages already taken are queued), finish the
        // queues, wait for the broker's acknowledgements, say offline, stop serving metrics.
        var services: [any Service] = []
        var http: HTTPService?
        if let addr = config.metricsAddress {
            let h = HTTPService(address: addr, log: log) { [self] _, path in
                self.http(path: path, shards: shards, subscriber: subscriber, publisher: publisher)
            }
            http = h
            services.append(h)
        }
        var reports: HTTPService?
        if let addr = config.httpAddress {
            let router = reportRouter(shards: shards, store: store) { r in
                stage.deliver(.timeline(r), to: Int(Daemon.hash(r.command.user) % count))
            }
            reports = HTTPService(reportsAt: addr, tls: config.httpTLS, router: router, log: log)
            services.append(reports!)
        }
        // Forgets acknowledged outputs and parks refused ones: every 20 ms, and once more when the
        // publisher stops (a refusal that arrives while draining is parked too).
        let settleOutputs: @Sendable () -> Void = { [self] in
            let ids = acks.drain()
            if !ids.isEmpty { do { try store.acknowledge(ids) } catch { acks.restore(ids) } }
            let refused = acks.drainRefused()
            if !refused.isEmpty { park(refused, store: store, acks: acks) }
        }
        // WAL → database file on a timer's thread, not inside a shard's commit; started before the
        // shards (their journal replay commits too) and stopped after them (so does their drain).
        // Every 50 ms: each pass then syncs what 50 ms of commits wrote, and the commits that
        // append to the WAL meanwhile wait less for it (every 500 ms: stalls of 3–25 ms; every
        // 100 ms: alert latency p99 0.9–1.5 ms; every 50 ms: 0.7–0.8 ms; docs/benchmarks.md).
        // With nothing committed a pass only reads the WAL's header.
        let checkpointLog = log
        services.append(
            TimerService(name: "checkpoint", label: "checkpoint", delay: .milliseconds(100), interval: .milliseconds(50)) { [self] in
                do {
                    try store.checkpoint()
                    if !checkpointHealthy.exchange(true, ordering: .relaxed) { checkpointLog.info("state checkpoint works again") }
                } catch {
                    if checkpointHealthy.exchange(false, ordering: .relaxed) { checkpointLog.warn("state checkpoint failed", ["error": "\(error)"]) }
                }
            })
        services.append(PublisherService(publisher: publisher, sink: sink, acks: acks, statusTopic: statusTopic, settle: settleOutputs))
        services.append(
            ShardsService(
                shards: shards, users: restored.users, reloadAfterRestore: restoreProgram.identity == program.identity ? nil : program,
                outboxCount: restored.outbox.count, journal: journal, commitMark: mark,
                storePath: store.location, dueReports: (try? store.dueReports()) ?? [], log: log, route: { route($0, seq: $1, payload: $2) }))
        services.append(PublisherConnectionService(publisher: publisher, sink: sink, outbox: restored.outbox, log: log))
        services.append(stage)  // stopped after the subscriber (it drains into the shards), before the shards
        services.append(SubscriberService(subscriber: subscriber, log: log))
        if let claimed { services.append(partitionSessions(claimed, base: subConfig, shards: shards)) }
        if config.clock == .wall {
            services.append(
                TimerService(name: "ticker", label: "tick", delay: .seconds(1), interval: .seconds(config.tickSeconds)) {
                    let now = Timestamp(milliseconds: Int64(Date().timeIntervalSince1970 * 1000))
                    for i in shards.indices { stage.deliver(.tick(now), to: i) }
                })
        }
        // Silences end by the wall clock, in both clock modes.
        services.append(
            TimerService(name: "silences", label: "silences", delay: .milliseconds(200), interval: .seconds(1)) { silences.tick(now: Daemon.wallNow()) })
        // Housekeeping: commit acknowledgements and retries, release journal segments every shard has committed.
        services.append(
            TimerService(name: "housekeeping", label: "housekeeping", delay: .milliseconds(500), interval: .milliseconds(500)) {
                if sink.backlog > 0 { _ = sink.publish([]) }
                for s in shards { s.queue.push(.housekeeping) }
                if let mark { mark.advance(to: shards.map { $0.committedThrough.load(ordering: .relaxed) }.min() ?? 0) }
            })
        // The journal's high-water mark, off the append path: a journal found cut below it at the
        // next start is refused, even past what the store committed (IngestJournal.recordHighWater).
        if claimed == nil {
            services.append(
                TimerService(name: "journal high water", label: "high-water", delay: .milliseconds(10), interval: .milliseconds(10)) {
                    journal.recordHighWater()
                })
        }
        // Forget acknowledged outputs quickly: the window in which a crash re-publishes an output
        // the broker already has is the time between its acknowledgement and this deletion.
        services.append(TimerService(name: "ack flush", label: "acks", delay: .milliseconds(20), interval: .milliseconds(20), handler: settleOutputs))
        services.append(
            ServiceNotifierService(startupPings: startupPings) { [self] in
                startServiceTimer(notifier, shards: shards, subscriber: subscriber, publisher: publisher)
            })
        var signalHandlers: [(Int32, @Sendable () -> Void)] = [SIGTERM, SIGINT].map { s in
            (
                s,
                { [self] in
                    log.info("shutting down", ["signal": s == SIGTERM ? "SIGTERM" : "SIGINT"])
                    notifier.stopping(status: "stopping: draining the shard queues")
                    stopping.store(true, ordering: .relaxed)
                    shutdown.signal()
                }
            )
        }
        signalHandlers.append(
            (
                SIGHUP,
                { [self] in
                    guard
                        let identity = reloader.reload(
                            notify: readySent.load(ordering: .relaxed), deliver: { p in for i in shards.indices { stage.deliver(.reload(p), to: i) } })
                    else { return }
                    try? store.setMeta("rules_identity", identity)
                    try? store.setMeta("rules_sources", reloader.storedSources)
                }
            ))
        services.append(SignalService(signalHandlers))

        let group = ServiceGroup(services, log: log)
        // The failing service logged why; the started ones are stopped. A metrics port still held
        // (by the instance stopping before this one) may free itself: 75 (EX_TEMPFAIL), which the
        // unit restarts; everything else is 1, which it does not.
        // A TLS certificate or key libmicrohttpd refuses is a configuration error: 2.
        do { try group.start() } catch let e as HTTPServerError { return e.code == .cannotListen ? 75 : 2 } catch { return 1 }
        log.info(
            "started",
            [
                "broker": broker.description, "client_id": clientID, "clock": config.clock.rawValue, "shards": String(shards.count),
                "rules": config.rules, "alerts": String(program.alerts.count), "rules_identity": program.identity,
                "metrics": http?.boundAddress ?? "off", "http": reports?.boundAddress.map { (config.httpTLS == nil ? "http://" : "https://") + $0 } ?? "off"
            ])

        shutdown.wait()
        group.stop()
        log.info("stopped", ["exit_code": String(exitCode.load(ordering: .relaxed))])
        return exitCode.load(ordering: .relaxed)
    }

    /// Stops the run as SIGTERM would, without being a signal (a partition rebalance).
    package func requestStop() { shutdown.signal() }

    /// Whether the run was stopped by SIGTERM or SIGINT.
    package var stoppedBySignal: Bool { stopping.load(ordering: .relaxed) }

    /// Refused publishes by kind and reason, and the dead letters parked in the store.
    private let refusals = Mutex<(counts: [RefusalKey: Int], deadLetters: Int)>(([:], 0))
    private struct RefusalKey: Hashable, Comparable {
        var kind: String, reason: String
        static func < (a: Self, b: Self) -> Bool { (a.kind, a.reason) < (b.kind, b.reason) }
    }

    /// Counts refused publishes, logs the first of each kind and reason, and parks the outbox
    /// items among them as dead letters, so that one output the broker will never take (an ACL
    /// that denies its topic) neither blocks the others nor is retried forever.
    private func park(_ refused: [Refusal], store: any StateBackend, acks: AckTracker) {
        let items = refused.compactMap { r in r.outboxID.map { (id: $0, reason: r.reason) } }
        var parked: Int?
        if !items.isEmpty {
            do { parked = try store.park(items, at: Int64(Date().timeIntervalSince1970 * 1000)) } catch {
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
    private let brokerDropped = Atomic<Int64>(-1)

    /// A `$SYS` message: records the broker's drop counter and warns when it grows.
    private func brokerReported(_ topic: String, _ payload: [UInt8]) {
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

    private let publisherRef = LateReference<MQTTClient>()
    private let healthSources = LateReference<HealthSources>()
    private let silencesRef = LateReference<SilenceDesk>()
    let timelinesRef = LateReference<TimelineDesk>()
    private let stageRef = LateReference<DecodeStage>()
    /// The wall clock (silences and command times).
    static func wallNow() -> Timestamp { Timestamp(milliseconds: Int64(Date().timeIntervalSince1970 * 1000)) }

    func applyCommon(_ c: inout MQTTClientConfiguration) {
        c.protocolVersion = config.mqttVersion
        c.username = config.username
        c.password = config.password
        c.caFile = config.caFile
        c.certFile = config.certFile
        c.keyFile = config.keyFile
    }

    func connectionEvent(_ e: MQTTConnectionEvent, role: String) {
        switch e {
        case .connected(_, let sessionLost):
            log.info("broker connected", ["role": role])
            let now = DispatchTime.now().uptimeNanoseconds
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
                notifier.ready(status: "running: subscribed, \(config.shards) shards")
            }
        case .disconnected(let reason):
            log.log(reason == "requested" ? .info : .warn, "broker disconnected", ["role": role, "reason": reason])
            let now = DispatchTime.now().uptimeNanoseconds
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
            exitCode.store(1, ordering: .relaxed)
            shutdown.signal()
        }
    }

    /// A stable user → shard hash (FNV-1a 64).
    static func hash(_ s: String) -> UInt64 {
        FNV1a64.hash(s)
    }

    /// The shard of a parsed inbound topic among `count` shards (its user's hash; 0 for anything else).
    static func shard(of parsed: TopicLayout.Parsed, count: UInt64) -> Int {
        if case .inbound(let user, _) = parsed { return Int(hash(user) % count) }
        return 0
    }

    private func http(path: String, shards: [Shard], subscriber: MQTTClient, publisher: MQTTClient) -> HTTPResponse {
        switch path {
        case "/healthz":
            let problems = healthProblems(shards: shards, subscriber: subscriber, publisher: publisher).problems
            if problems.isEmpty {
                let warnings = healthWarnings()
                return HTTPResponse(body: warnings.isEmpty ? "ok\n" : "degraded: " + warnings.joined(separator: "; ") + "\n")
            }
            return HTTPResponse(status: 503, body: problems.joined(separator: "; ") + "\n")
        case "/metrics":
            return HTTPResponse(
                contentType: "text/plain; version=0.0.4; charset=utf-8",
                bytes: metrics(shards: shards, subscriber: subscriber, publisher: publisher))
        default:
            return HTTPResponse(status: 404, body: "not found; try /metrics or /healthz\n")
        }
    }

    func metrics(shards: [Shard], subscriber: MQTTClient, publisher: MQTTClient) -> [UInt8] {
        var total = ShardStats()
        var depths: [Int] = []
        let staged = stageRef.value?.depth ?? 0
        for s in shards {
            depths.append(s.queue.count)
            total += s.stats.withLock { $0 }
        }
        var m = MetricsText()
        m.family("mobilityd_messages_received_total", "counter", "MQTT messages received on the input topics.")
        m.sample("mobilityd_messages_received_total", Double(total.ingest.messages))
        m.family("mobilityd_samples_accepted_total", "counter", "Samples accepted into the engine.")
        m.sample("mobilityd_samples_accepted_total", Double(total.ingest.samplesAccepted))
        m.family("mobilityd_samples_duplicate_total", "counter", "Samples ignored as re-deliveries of a known id.")
        m.sample("mobilityd_samples_duplicate_total", Double(total.ingest.duplicates))
        m.family("mobilityd_samples_superseded_total", "counter", "Samples that replaced an older sync version.")
        m.sample("mobilityd_samples_superseded_total", Double(total.ingest.superseded))
        m.family("mobilityd_rejected_total", "counter", "Inputs rejected, by reason.")
        for r in RejectionReason.allCases { m.sample("mobilityd_rejected_total", ["reason": r.rawValue], Double(total.ingest.rejected[r] ?? 0)) }
        m.family("mobilityd_deletions_total", "counter", "Samples retracted by deletions.")
        m.sample("mobilityd_deletions_total", Double(total.ingest.deletions))
        m.family("mobilityd_samples_deleted_before_arrival_total", "counter", "Samples dropped because a deletion of their id came first.")
        m.sample("mobilityd_samples_deleted_before_arrival_total", Double(total.ingest.deletedBeforeArrival))
        m.family("mobilityd_timeline_events_total", "counter", "Clinical events and annotations recorded.")
        m.sample("mobilityd_timeline_events_total", Double(total.ingest.events))
        m.family("mobilityd_users", "gauge", "Users with state.")
        m.sample("mobilityd_users", Double(total.users))
        m.family("mobilityd_queue_depth", "gauge", "Messages waiting per shard, and in the decode stage (queued or being decoded).")
        for (i, d) in depths.enumerated() { m.sample("mobilityd_queue_depth", ["shard": String(i)], Double(d)) }
        m.sample("mobilityd_queue_depth", ["stage": "decode"], Double(staged))
        m.family(
            "mobilityd_shard_busy_seconds", "gauge", "How long each shard's batch at hand has run (0 while idle); past --stall-timeout the shard is stalled.")
        let now = DispatchTime.now().uptimeNanoseconds
        for s in shards { m.sample("mobilityd_shard_busy_seconds", ["shard": String(s.index)], Double(s.busyNanoseconds(now: now)) / 1e9) }
        m.family(
            "mobilityd_shard_batch_seconds_max", "gauge",
            "The longest shard batch since the start (taken to committed and handed to the broker), by shard.")
        for s in shards { m.sample("mobilityd_shard_batch_seconds_max", ["shard": String(s.index)], s.stats.withLock { $0.longestBatchSeconds }) }
        m.family("mobilityd_evaluation_seconds", "summary", "Time spent ingesting and evaluating rules, per batch.")
        m.sample("mobilityd_evaluation_seconds_sum", total.evaluationSeconds)
        m.sample("mobilityd_evaluation_seconds_count", Double(total.batches))
        m.family("mobilityd_alert_transitions_total", "counter", "Alert transitions published, by rule and status.")
        for (rule, byStatus) in total.alerts.sorted(by: { $0.key < $1.key }) {
            for (st, n) in byStatus.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                m.sample("mobilityd_alert_transitions_total", ["rule": rule, "status": st.rawValue], Double(n))
            }
        }
        m.family("mobilityd_alert_reminders_total", "counter", "Repeat reminders of firing alerts, by rule.")
        for (rule, n) in total.repeats.sorted(by: { $0.key < $1.key }) { m.sample("mobilityd_alert_reminders_total", ["rule": rule], Double(n)) }
        healthSources.value?.desk?.metrics(into: &m)
        silencesRef.value?.metrics(into: &m, now: Daemon.wallNow())
        timelinesRef.value?.metrics(into: &m)
        m.family("mobilityd_alerts_firing", "gauge", "Alerts firing now, by rule.")
        for (rule, n) in total.firing.sorted(by: { $0.key < $1.key }) { m.sample("mobilityd_alerts_firing", ["rule": rule], Double(n)) }
        m.family("mobilityd_series_published_total", "counter", "Series messages published (one per user-day, every series of the day).")
        m.sample("mobilityd_series_published_total", Double(total.seriesPublished))
        m.family(
            "mobilityd_outputs_uncommitted", "gauge", "Outputs made but not yet committed (series wait for the commit interval); published once committed.")
        m.sample("mobilityd_outputs_uncommitted", Double(total.outputsUncommitted))
        m.family("mobilityd_weekly_reports_total", "counter", "Weekly care-team reports built, kept and published.")
        m.sample("mobilityd_weekly_reports_total", Double(total.weeklyReports))
        m.family("mobilityd_weekly_reports_due", "gauge", "Weekly reports whose week closed, not built yet (waiting for a commit or the report worker).")
        m.sample("mobilityd_weekly_reports_due", Double(total.weeklyReportsDue))
        m.family("mobilityd_publish_errors_total", "counter", "Publishes that libmosquitto refused.")
        m.sample("mobilityd_publish_errors_total", Double(total.publishErrors))
        m.family(
            "mobilityd_publish_refused_total", "counter",
            "Outputs refused for good, by kind and reason: by the broker (MQTT 5 reason code) or by libmosquitto (a message it can never send).")
        let (refusedCounts, deadLetters) = refusals.withLock { ($0.counts, $0.deadLetters) }
        for (k, n) in refusedCounts.sorted(by: { $0.key < $1.key }) {
            m.sample("mobilityd_publish_refused_total", ["kind": k.kind, "reason": k.reason], Double(n))
        }
        m.family("mobilityd_dead_letters", "gauge", "Refused outputs parked in the state store (dead_letters), not retried.")
        m.sample("mobilityd_dead_letters", Double(deadLetters))
        m.family("mobilityd_state_commits_total", "counter", "State store commits (users, journal positions and outputs together).")
        m.sample("mobilityd_state_commits_total", Double(total.commits))
        m.family("mobilityd_state_commit_failures_total", "counter", "State store commits that failed (outputs held until one succeeds).")
        m.sample("mobilityd_state_commit_failures_total", Double(total.commitFailures))
        m.family("mobilityd_journal_skipped_total", "counter", "Journal records skipped on replay because they were already committed.")
        m.sample("mobilityd_journal_skipped_total", Double(total.replayed))
        m.family("mobilityd_journal_writable", "gauge", "0 while the ingest journal refuses writes (messages are not acknowledged).")
        m.sample("mobilityd_journal_writable", journalHealthy.load(ordering: .relaxed) ? 1 : 0)
        let findings = stateFindings.withLock { $0 }
        m.family(
            "mobilityd_state_damage", "gauge",
            "What the start found damaged or missing and went on without (--recover-journal, --rebuild-store, or accepted at an earlier start), by side.")
        for side in [DurableStateCheck.Finding.Side.journal, .store] {
            m.sample("mobilityd_state_damage", ["side": side.rawValue], Double(findings.filter { $0.side == side }.count))
        }
        m.family(
            "mobilityd_state_records_lost", "gauge", "Acknowledged records the start's damage cost (at most this many where the count cannot be exact).")
        m.sample("mobilityd_state_records_lost", Double(findings.reduce(UInt64(0)) { $0 + ($1.lost ?? 0) }))
        let hs = healthSources.value
        m.family("mobilityd_outputs_unacknowledged", "gauge", "Outputs published but not yet acknowledged by the broker, or waiting for a retry.")
        m.sample("mobilityd_outputs_unacknowledged", Double((hs?.sink.acks.inFlight ?? 0) + (hs?.sink.backlog ?? 0)))
        let dropped = brokerDropped.load(ordering: .relaxed)
        if dropped >= 0 {
            m.family(
                "mobilityd_broker_messages_dropped", "gauge",
                "Messages the broker reports it dropped for its queue limits ($SYS/broker/publish/messages/dropped; mosquitto only).")
            m.sample("mobilityd_broker_messages_dropped", Double(dropped))
        }
        m.family("mobilityd_broker_connected", "gauge", "1 when the connection is up, by role.")
        m.sample("mobilityd_broker_connected", ["role": "subscriber"], subscriber.isConnected ? 1 : 0)
        m.sample("mobilityd_broker_connected", ["role": "publisher"], publisher.isConnected ? 1 : 0)
        m.family("mobilityd_broker_subscribed", "gauge", "1 once the broker answered the input subscriptions of the current connection.")
        m.sample("mobilityd_broker_subscribed", subscriber.isSubscribed ? 1 : 0)
        m.family("mobilityd_broker_reconnects_total", "counter", "Reconnections after the first connection, by role.")
        m.sample("mobilityd_broker_reconnects_total", ["role": "subscriber"], Double(max(0, subscriber.connectionCount - 1)))
        m.sample("mobilityd_broker_reconnects_total", ["role": "publisher"], Double(max(0, publisher.connectionCount - 1)))
        m.family(
            "mobilityd_broker_sessions_lost_total", "counter",
            "Reconnections of the subscriber or a partition session that the broker answered without the session it was keeping (its queued inputs are lost).")
        m.sample("mobilityd_broker_sessions_lost_total", Double(sessionsLost.load(ordering: .relaxed)))
        let watches = evictionWatches.withLock { $0 }
        m.family(
            "mobilityd_broker_evictions_total", "counter",
            "Connections the broker closed within 10 s of accepting them (another connection with the same client id), by role.")
        for role in ["subscriber", "publisher"] { m.sample("mobilityd_broker_evictions_total", ["role": role], Double(watches[role]?.evictions ?? 0)) }
        m.family("mobilityd_broker_eviction_loop", "gauge", "1 while a connection is evicted right after each connect (/healthz fails), by role.")
        for role in ["subscriber", "publisher"] { m.sample("mobilityd_broker_eviction_loop", ["role": role], watches[role]?.isLooping == true ? 1 : 0) }
        m.family("mobilityd_rule_reloads_total", "counter", "SIGHUP rule reloads, by result.")
        m.sample("mobilityd_rule_reloads_total", ["result": "success"], Double(reloader.successes))
        m.sample("mobilityd_rule_reloads_total", ["result": "failure"], Double(reloader.failures))
        m.family("mobilityd_rules_info", "gauge", "The loaded rule set.")
        m.sample("mobilityd_rules_info", ["identity": reloader.identity], 1)
        m.family("mobilityd_start_time_seconds", "gauge", "Start time of the process since the epoch.")
        m.sample("mobilityd_start_time_seconds", started.timeIntervalSince1970.rounded())
        return m.bytes
    }
}
