import Foundation
import Ingest
import MobilityModel
import MobilityWire
import RuleEngine
import RuleLanguage
import StateStore
import Synchronization

/// One worker: a thread that alone owns an `Ingestor` (and so its users' state), fed by a bounded
/// queue. It commits the changed users, the journal position they applied and the outputs they
/// produced in one store transaction, then publishes those outputs — when its
/// `ShardCommitPolicy` says (at once for a batch with outputs or, fed by streams, with more input
/// waiting behind it; else every commit interval).
///
/// Sendability: `ingestor`, `applied` and the pending lists are only touched by the shard's own
/// thread (in `run`, or in `restore` before `start`); shared state is in a Mutex or Atomic.
final class Shard: @unchecked Sendable {
    let index: Int
    /// The wall and monotonic clocks the shard's thread reads.
    let clock: DaemonClock
    let queue: BoundedQueue<ShardItem>
    let stats = Mutex(ShardStats())
    /// Every journalled message up to this sequence number routed here is committed.
    let committedThrough = Atomic<UInt64>(0)
    /// When the batch at hand started (uptime ns), 0 while waiting for work: a batch that runs
    /// past the stall bound (a blocked commit, a pathological rule) is a stalled shard.
    let busySince = Atomic<UInt64>(0)
    var ingestor: Ingestor
    let sink: any OutputSink
    let store: any StateBackend
    let journal: IngestJournal?
    let acks: PublishTracker
    let finished = DispatchSemaphore(value: 0)
    let log: Logger
    let layout: TopicLayout
    var applied: [String: UInt64] = [:]
    /// Users whose changes are not committed yet, and those changed by the batch at hand.
    var pendingUsers: Set<String> = []
    var batchUsers: Set<String> = []
    /// Users whose series wait in the outbox for the interval's commit (committed with the next
    /// commit of any scope: a batch commit takes them along).
    var deferredUsers: Set<String> = []
    /// The outbox items, history rows (series points, alert transitions, timeline entries) and series
    /// messages of the outputs not committed yet.
    var pending = OutputPipeline.Staged()
    /// Whether outputs are recorded in the care-team history (`--history-days` not `off`).
    let recordsHistory: Bool
    /// Builds, keeps and publishes the weekly reports of the due weeks, off this thread.
    let reportWorker: ReportWorker
    /// Users whose last sample id changed since the last acknowledgement.
    var pendingAcks: [String: String] = [:]
    /// Committed but not yet published acknowledgements, coalesced per user.
    var committedAcks: [String: String] = [:]
    /// When to commit, release the journal and acknowledge (set when the thread starts).
    var policy: ShardCommitPolicy
    let acknowledge: (@Sendable (_ user: String, _ lastID: String) -> Void)?
    /// The output stages: acknowledgement screen, silences, team fan-out, FHIR copies, history,
    /// report markers.
    var outputs: OutputPipeline
    /// Care-staff acknowledgements of alert instances (nil: commands are not taken).
    let desk: AcknowledgementDesk?
    /// Care-staff timeline commands (nil: none are taken).
    let timelines: TimelineDesk?
    /// Care-staff changes applied to the engine and not committed yet (their audit rows and
    /// announcing outputs go with the next commit), and the answers waiting for that commit.
    var pendingAudited: [AuditedChange] = []
    var pendingAnswers: [TimelineAnswer] = []
    /// Partition sessions waiting for the next successful commit (``ShardItem/durable(_:)``).
    var durables: [CommitWaiter] = []
    /// Without a journal: a message was taken after the last commit waiter or barrier (its
    /// waiter is still to come), so the batch's commit waits for it (``ShardCommitPolicy``).
    var awaitingWaiter = false
    /// A commit waiter taken since the last commit of everyone had more input waiting behind
    /// it (``CommitWaiter/backlog``): the first batch whose waiters have all come commits at
    /// once, though the batch that took it ended inside another partition's hand-off.
    var backlogWaiting = false
    /// Called when the store fenced a commit (partitioned input: the run stops, see ``Daemon/commitFenced()``).
    let onFenced: (@Sendable () -> Void)?

    /// The care-staff desks whose commands a shard applies to its users (nil: that kind is not taken).
    struct StaffDesks: Sendable {
        var acknowledgements: AcknowledgementDesk?
        var silences: SilenceDesk?
        var timelines: TimelineDesk?
    }

    init(
        index: Int, ingestor: Ingestor, capacity: Int, sink: any OutputSink, store: any StateBackend, journal: IngestJournal?,
        acks: PublishTracker, log: Logger, ackIntervalMs: Int = 0, commitIntervalMs: Int = 0,
        historyDays: Int? = 90, publishesSeries: Bool = true, careTeams: CareTeams = CareTeams(), fhir: Bool = false,
        desks: StaffDesks = StaffDesks(), onFenced: (@Sendable () -> Void)? = nil, clock: DaemonClock = .system, keeper: ShardCommitPolicy.Keeper? = nil,
        acknowledge: (@Sendable (String, String) -> Void)? = nil
    ) {
        self.clock = clock
        self.desk = desks.acknowledgements
        self.timelines = desks.timelines
        self.onFenced = onFenced
        self.acknowledge = acknowledge
        self.recordsHistory = historyDays != nil
        let keeper = keeper ?? (journal != nil ? .journal : .none)
        precondition((keeper == .journal) == (journal != nil), "the journal keeps a shard's messages exactly when it has one")
        self.policy = ShardCommitPolicy(
            intervalNs: UInt64(commitIntervalMs) * 1_000_000, ackIntervalNs: UInt64(ackIntervalMs) * 1_000_000, keeper: keeper, now: 0)
        self.index = index
        self.ingestor = ingestor
        self.queue = BoundedQueue(capacity: capacity)
        self.sink = sink
        self.store = store
        self.journal = journal
        self.acks = acks
        self.log = log
        self.layout = ingestor.layout
        let program = ingestor.engine.program, layout = ingestor.layout
        self.outputs = OutputPipeline(
            layout: layout, screen: AcknowledgementScreen(desk: desks.acknowledgements, recordsHistory: historyDays != nil),
            bundler: publishesSeries ? SeriesBundler(layout: layout) : nil, silences: SilenceStage(desk: desks.silences),
            teams: TeamOutputs(careTeams: careTeams, layout: layout),
            fhir: fhir ? FHIROutputs(program: program, root: layout.root, observations: publishesSeries) : nil,
            history: HistoryStage(records: historyDays != nil), markers: ReportMarkers(program: program, historyDays: historyDays))
        self.reportWorker = ReportWorker(index: index, store: store, sink: sink, layout: ingestor.layout, log: log, clock: clock)
    }

    /// Makes room for `n` users (before restoring).
    func reserveUsers(_ n: Int) { ingestor.reserveUsers(n) }

    /// Restores a user before the thread starts: moves the record's state into the engine (the
    /// record is left without it) and notes the journal position the user's state applied.
    func restore(_ r: inout StoredUser<PreparedUser>) {
        ingestor.restore(user: r.user, prepared: r.state.take(), eventNow: r.eventNow, claims: r.eventClaims)
        applied[r.user] = r.appliedSeq
        // The teams the user's profile named before the restart (their team topics already hold
        // the retained copies): a profile that moves the user now clears the teams left.
        let teams = ingestor.engine.careTeams(of: r.user)
        if !teams.isEmpty { outputs.teams.careTeams.setProfileTeams(teams, of: r.user) }
        timelines?.noteCalendars(of: CollectionOfOne(r.user), in: ingestor.engine)
    }

    func start() {
        updateFiring()  // the restored users' firing alerts
        reportWorker.counted = { [weak self] built, errors, waiting in
            self?.stats.withLock { s in
                s.weeklyReports += built
                s.publishErrors += errors
                s.reportsDueInWorker = waiting
            }
        }
        reportWorker.onFenced = onFenced
        reportWorker.start()
        let t = ThreadName.thread("shard-\(index)") { [self] in run() }
        t.start()
    }

    /// The firing counts and alert names last written to the gauges.
    var gaugedFiring: (names: [String], counts: [Int])?

    /// Sets the firing gauges from the engine's alert states (they are not counted from transitions);
    /// after each batch, but the lock and the dictionary writes only when a count or a name changed.
    private func updateFiring() {
        let names = ingestor.engine.alertNames, counts = ingestor.engine.firingCounts
        if let g = gaugedFiring, g.counts == counts, g.names == names { return }
        gaugedFiring = (names, counts)
        stats.withLock { s in
            s.firing.removeAll(keepingCapacity: true)
            for (j, n) in counts.enumerated() { s.firing[names[j]] = n }
        }
    }

    /// How long the queue may be waited on before the interval's commit of what waits for it is
    /// due (nil: until the next item, housekeeping's every 500 ms at the latest; only a shard fed
    /// by streams has partitions waiting on the interval, which may be shorter than that). The
    /// queue's wait is timed on the wall clock, the policy on the daemon's: a step of the wall
    /// clock moves the wake, and housekeeping bounds it.
    private func commitDueInNs() -> UInt64? {
        guard !durables.isEmpty || !pendingUsers.isEmpty || !pending.outbox.isEmpty else { return nil }
        return policy.commitDueInNs(now: clock.uptimeNanoseconds())
    }

    /// Waits until the thread has drained a closed queue.
    func join() { finished.wait() }

    /// A week found due in the store at start (its marker committed before a stop or crash).
    func addDue(_ d: WeeklyReports.Due) { outputs.markers.add(d) }

    /// Hands the due weeks to the report worker, which builds, keeps and publishes their reports,
    /// then prunes those users' history. Call only once their markers are durable. Weeks the
    /// worker refuses (it holds its capacity) stay due here and are handed over after the next
    /// commit; weeks it cannot build stay due there (their markers are in the store).
    func handReports() {
        guard let reports = outputs.markers.reports, !outputs.markers.due.isEmpty else { return }
        // In week order, so that a refusal for capacity keeps a user's later weeks behind the earlier.
        let jobs = outputs.markers.due.sorted { ($0.week, $0.user) < ($1.week, $1.user) }.map { d in
            ReportWorker.Job(due: d, reports: reports, timeline: ingestor.engine.timeline(of: d.user), teams: outputs.teams.careTeams.teams(of: d.user))
        }
        outputs.markers.due.removeAll(keepingCapacity: true)
        for d in reportWorker.offer(jobs) { outputs.markers.due.insert(d) }
    }

    /// The shard's thread: batch after batch, ingest → output stages → commit policy → commit and
    /// publish → stats, until the queue is closed and drained; then a last commit.
    private func run() {
        handReports()  // weeks left due by the last run
        var out: [EngineOutput] = []
        out.reserveCapacity(256)
        // What was taken from the queue, and the first item of it not handled yet: a batch is
        // bounded by work (``BatchBudget``), and what is left of the take is the next batch.
        var taken: [ShardItem] = []
        taken.reserveCapacity(4096)
        var next = 0
        // The queue's mark read before `taken` was taken; and the journal position this shard
        // has handled everything up to (it never goes back).
        var takenThrough: UInt64 = 0
        var handledThrough: UInt64 = 0
        policy.started(now: clock.uptimeNanoseconds())  // the first interval runs from the start
        while next < taken.count || queue.waitForItems(atMostNs: commitDueInNs()) {
            // One clock read per batch, not per message.
            let started = clock.uptimeNanoseconds()
            busySince.store(started, ordering: .relaxed)
            if next >= taken.count {
                // Read before taking: every message up to it routed here is in the queue now.
                takenThrough = journal?.queuedThrough ?? 0
                queue.takeAll(into: &taken)
                next = 0
            }
            var batch = Batch(wall: clock.wall())
            ingest(&taken, from: &next, batch: &batch, into: &out)
            let evaluated = Double(clock.uptimeNanoseconds() - started) / 1e9
            stageOutputs(&out, wall: batch.wall)
            let scope = commitScope(out, batch: batch, now: started)
            // Every message up to q routed here is handled: all of the take once it is through
            // (the queue's mark), else up to the last journalled message handled (a shard's queue
            // is in journal order).
            handledThrough = max(handledThrough, next >= taken.count ? takenThrough : batch.lastSeq)
            let result = commitAndPublish(scope, through: handledThrough, now: started)
            let took = Double(clock.uptimeNanoseconds() - started) / 1e9
            count(batch, out, result, evaluated: evaluated, took: took)
            updateFiring()
            out.removeAll(keepingCapacity: true)
            for b in batch.barriers { b.signal() }
            busySince.store(0, ordering: .relaxed)
        }
        finish()
    }

    /// Closed: one last attempt to commit what is pending, and to publish the acknowledgements.
    private func finish() {
        busySince.store(clock.uptimeNanoseconds(), ordering: .relaxed)
        policy.closed()  // commit everything
        // The queue is closed and empty: every message up to q routed here has been taken.
        let q = journal?.queuedThrough ?? 0
        if let items = commit() {
            _ = policy.commitSucceeded(pendingUsersLeft: pendingUsers.count)
            if journal != nil { committedThrough.store(q, ordering: .relaxed) }
            if !items.isEmpty { _ = sink.publish(items) }
            stats.withLock { [held = pending.seriesMessages, left = pending.outbox.count] in
                $0.seriesPublished += held
                $0.outputsUncommitted = left
            }
            pending.seriesMessages = 0
            for (u, id) in pendingAcks { committedAcks[u] = id }
            for w in durables { w.committed() }
            if !outputs.markers.due.isEmpty && pending.history.isEmpty { handReports() }
        } else {
            policy.commitFailed()
            for w in durables { w.failed() }
        }
        // The worker's last attempt at the weeks it holds; what it cannot build stays due for the next start.
        reportWorker.finish()
        if policy.acknowledgementsDurable(waiting: acknowledge != nil && !committedAcks.isEmpty, now: clock.uptimeNanoseconds()) {
            publishAcks()
        }
        finished.signal()
    }
}

extension EngineOutput {
    /// True for a series point.
    var isSeries: Bool { if case .series = self { true } else { false } }
}

extension Shard {

    /// How long the batch at hand has run at `now` (uptime ns), 0 while idle.
    func busyNanoseconds(now: UInt64) -> UInt64 {
        let since = busySince.load(ordering: .relaxed)
        return since == 0 || now < since ? 0 : now - since
    }
}
