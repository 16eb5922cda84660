import Foundation
import HTTPEndpoint
import Ingest
import MQTTTransport
import MobilityWire
import RuleEngine
import RuleLanguage
import StateStore

extension Daemon {
    /// Everything one run is made of, built by ``components(program:broker:state:)`` before any of
    /// it starts; each part gets the parts it uses when it is made (no part is changed after).
    struct Components: Sendable {
        /// The current rules.
        let program: Program
        let broker: BrokerURL
        let clientID: String
        let store: any StateBackend
        let journal: IngestJournal
        /// Records how far the shards committed the journal (nil for partitioned input, which has no journal).
        let commitMark: JournalCommitMark?
        /// The broker's answers to the publisher's publishes.
        let acks: PublishTracker
        /// The publisher's connection (clean session), which carries the status and the last will.
        let publisher: MQTTClient
        let sink: MQTTOutputSink
        let shards: [Shard]
        /// Which of the shards holds a user.
        let routing: ShardRouting
        let desk: AcknowledgementDesk
        let silences: SilenceDesk
        let timelines: TimelineDesk
        /// Decodes large samples payloads on a thread of its own, in order, before their shard.
        let stage: DecodeStage
        /// Routes the subscriber's messages.
        let router: InboundRouter
        /// The subscriber's connection (the persistent session).
        let subscriber: MQTTClient
        /// The owned partitions' MQTT sessions or JetStream consumers (partitioned input; nil: the
        /// subscriber takes the inputs).
        let partitionInput: (any Service & Sendable)?
        /// The console's sign-ins and sessions (`--console-staff`; nil: no console).
        let consoleSessions: ConsoleSessions?
    }

    /// A part of the run could not be made; why is logged. `store`: what the state store
    /// answered, when reading it failed.
    struct ComponentFailure: Error {
        var store: StoreStartFailure?
    }

    /// Builds every part of a run, in dependency order: the publisher and its sink, the staff
    /// desks (restored from the store), the shards, the decode stage, the inbound router and the
    /// subscriber. Nothing runs yet.
    func components(program: Program, broker: BrokerURL, state: RestoredState) throws(ComponentFailure) -> Components {
        let clientID = config.clientID ?? "mobilityd-\(config.instance)"
        let acks = PublishTracker()
        let publisher = try makePublisher(broker: broker, clientID: clientID, acks: acks)
        let sink = MQTTOutputSink(client: publisher, acks: acks)
        let desks = try makeDesks(store: state.store, sink: sink)
        var decoder = WireDecoder()
        decoder.maxPayloadBytes = config.maxPayloadBytes
        let routing = shardRouting
        let shards = makeShards(
            count: routing.count, program: state.program, decoder: decoder, state: state, sink: sink, acks: acks,
            desks: Shard.StaffDesks(acknowledgements: desks.desk, silences: desks.silences, timelines: desks.timelines))
        let journal = state.journal
        let stage = DecodeStage(
            shards: shards.map(\.queue), decoder: decoder, capacity: config.queueCapacity, threshold: DecodeStage.threshold(shards: shards.count)
        ) { journal.markQueued($0) }
        let router = InboundRouter(
            layout: layout, desk: desks.desk, silences: desks.silences, timelines: desks.timelines, stage: stage, journal: journal,
            routing: routing, termination: termination, clock: clock, log: log
        ) { [self] topic, payload in brokerReported(topic, payload) }
        let (subscriber, subscriberConfig) = try makeSubscriber(
            broker: broker, clientID: clientID, router: router,
            commands: [desks.desk.subscription, desks.silences.subscription, desks.timelines.subscription])
        return Components(
            program: program, broker: broker, clientID: clientID, store: state.store, journal: journal,
            // Partitioned input is not journalled: nothing to release or record.
            commitMark: claimed == nil ? JournalCommitMark(journal: journal, store: state.store, recorded: state.committedThrough, log: log) : nil,
            acks: acks, publisher: publisher, sink: sink, shards: shards, routing: routing, desk: desks.desk, silences: desks.silences,
            timelines: desks.timelines, stage: stage, router: router, subscriber: subscriber,
            partitionInput: try claimed.map { (c) throws(ComponentFailure) -> any Service & Sendable in
                try partitionInput(c, base: subscriberConfig, shards: shards, routing: routing, store: state.store)
            },
            consoleSessions: config.consoleStaff.map { [clock] in
                ConsoleSessions(passwords: $0, policy: config.consoleSessionPolicy) { clock.wall().milliseconds }
            })
    }

    /// The publisher: its own connection (clean session), carrying the status (`online` on each
    /// connect) and the last will (`offline`).
    private func makePublisher(broker: BrokerURL, clientID: String, acks: PublishTracker) throws(ComponentFailure) -> MQTTClient {
        let statusTopic = layout.status(config.instance)
        var pubConfig = MQTTClientConfiguration(broker: broker, clientID: clientID + "-pub")
        applyCommon(&pubConfig)
        if let u = config.publisherUsername { pubConfig.username = u }
        pubConfig.cleanSession = true
        pubConfig.will = (statusTopic, Array("offline".utf8), true)
        // The connect callback publishes on the client it belongs to (the client hands itself over).
        do {
            return try MQTTClient(
                pubConfig, onMessage: { _, _, _ in },
                onEvent: { [self] publisher, e in
                    connectionEvent(e, role: "publisher")
                    if case .connected = e, let mid = try? publisher.publish(topic: statusTopic, payload: Array("online".utf8), retain: true) {
                        acks.published(mid: mid, id: nil, topic: statusTopic)
                    }
                }, onPublished: { _, mid, reason in acks.answered(mid: mid, reasonCode: reason) })
        } catch {
            log.error("cannot create MQTT publisher", ["error": error.description])
            throw ComponentFailure()
        }
    }

    /// The care-staff desks, with what the store holds of them (acknowledgements, silences).
    private func makeDesks(
        store: any StateBackend, sink: MQTTOutputSink
    ) throws(ComponentFailure) -> (desk: AcknowledgementDesk, silences: SilenceDesk, timelines: TimelineDesk) {
        let scope = CommandScope(partitions: claimed?.partitions)  // which commands this run answers
        let publishNow: @Sendable (String, [UInt8]) -> Void = { sink.publishUntracked(topic: $0, payload: $1, retain: false) }
        let desk = AcknowledgementDesk(layout: layout, store: store, sink: sink, teams: careTeams, log: log, scope: scope, publishNow: publishNow)
        do { try desk.restore() } catch {
            log.error("cannot read the acknowledgements", ["error": "\(error)"])
            throw ComponentFailure(store: StoreStartFailure(error))
        }
        let silences = SilenceDesk(
            layout: layout, store: store, sink: sink, teams: careTeams, log: log, scope: scope, labelNames: { [reloader] in reloader.labelNames },
            publishNow: publishNow)
        do { try silences.restore() } catch {
            log.error("cannot read the silences", ["error": "\(error)"])
            throw ComponentFailure(store: StoreStartFailure(error))
        }
        let timelines = TimelineDesk(
            layout: layout, teams: careTeams, log: log, scope: scope, defaultCalendar: config.engine.defaultCalendar, publishNow: publishNow)
        return (desk, silences, timelines)
    }

    /// `count` shards, each with an engine of the rules the state was made with (`program`).
    private func makeShards(
        count: Int, program: Program, decoder: WireDecoder, state: RestoredState, sink: MQTTOutputSink, acks: PublishTracker, desks: Shard.StaffDesks
    ) -> [Shard] {
        let layout = layout
        var onFenced: (@Sendable () -> Void)?
        if claimed != nil { onFenced = { @Sendable [self] in commitFenced() } }
        // What keeps a shard's messages until their commit: the journal, a JetStream partition's
        // stream, or nothing (an MQTT partition session, one message in flight).
        let keeper: ShardCommitPolicy.Keeper =
            switch claimed.map({ partitioning(of: $0).intake }) {
            case nil: .journal
            case .jetStream?: .stream
            case .mqttSessions?: .none
            }
        return (0..<count).map { i in
            Shard(
                index: i,
                ingestor: Ingestor(
                    engine: Engine(program: program, configuration: config.engine), layout: layout,
                    decoder: decoder, clock: config.clock, boundedByWallClock: true),
                capacity: config.queueCapacity, sink: sink, store: state.store, journal: claimed == nil ? state.journal : nil, acks: acks, log: log,
                ackIntervalMs: config.ackIntervalMs, commitIntervalMs: config.commitIntervalMs,
                historyDays: config.historyDays, publishesSeries: config.publishSeries, careTeams: careTeams, fhir: config.fhir,
                desks: desks, onFenced: onFenced, clock: clock, keeper: keeper,
                acknowledge: { user, lastID in
                    sink.publishAcknowledgement(topic: layout.acks(user), payload: CommitAckPayload.bytes(user: user, lastID: lastID))
                })
        }
    }

    /// The subscriber: the persistent session (fixed client id, clean session off, QoS 1), and its
    /// configuration (the partition sessions connect with the same settings); `commands`: the
    /// staff command subscriptions.
    private func makeSubscriber(
        broker: BrokerURL, clientID: String, router: InboundRouter, commands: [String]
    ) throws(ComponentFailure) -> (MQTTClient, MQTTClientConfiguration) {
        var subConfig = MQTTClientConfiguration(broker: broker, clientID: clientID)
        applyCommon(&subConfig)
        subConfig.cleanSession = false
        // MQTT 5: a retained input keeps its flag when forwarded live, so it is refused the first time too.
        subConfig.retainAsPublished = true
        // mosquitto's count of messages it dropped for its queue limits (it says nothing else).
        // Inputs come through the partition sessions; every instance takes the commands (CommandScope).
        subConfig.subscriptions = claimed != nil ? commands : layout.subscriptions + [Daemon.brokerDroppedTopic] + commands
        // A payload the decoder would reject for its size is neither copied nor journalled.
        subConfig.maxIncomingPayloadBytes = config.maxPayloadBytes
        // An input the router gives up on (the run ends while the journal refuses it) must not be
        // acknowledged: the callback drops the connection before libmosquitto can acknowledge it,
        // and the broker's session delivers it again (the client hands itself to the callback).
        do {
            let subscriber = try MQTTClient(
                subConfig,
                onMessage: { subscriber, topic, payload in
                    if !router.message(topic: topic, payload: payload) { subscriber.abortConnection() }
                },
                onEvent: { [self] _, e in connectionEvent(e, role: "subscriber") },
                onOversized: { _, topic, size in router.oversized(topic: topic, size: size) },
                onRetained: { _, topic, size in router.retained(topic: topic, size: size) })
            return (subscriber, subConfig)
        } catch {
            log.error("cannot create MQTT subscriber", ["error": error.description])
            throw ComponentFailure()
        }
    }
}
