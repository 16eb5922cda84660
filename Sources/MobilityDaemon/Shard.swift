import Foundation
import MobilityModel
import MobilityWire
import RuleEngine
import RuleLanguage
import StateStore
import Synchronization

import struct PostgresStore.PostgresError

/// One worker: a thread that alone owns an `Ingestor` (and so its users' state), fed by a bounded
/// queue. It commits the changed users, the journal position they applied and the outputs they
/// produced in one SQLite transaction, then publishes those outputs — when its
/// `ShardCommitPolicy` says (at once for a batch with outputs, else every commit interval).
///
/// Sendability: `ingestor`, `applied` and the pending lists are only touched by the shard's own
/// thread (in `run`, or in `restore` before `start`); shared state is in a Mutex or Atomic.
final class Shard: @unchecked Sendable {
    let index: Int
    let queue: BoundedQueue<ShardItem>
    let stats = Mutex(ShardStats())
    /// Every journalled message up to this sequence number routed here is committed.
    let committedThrough = Atomic<UInt64>(0)
    /// When the batch at hand started (uptime ns), 0 while waiting for work: a batch that runs
    /// past the stall bound (a blocked commit, a pathological rule) is a stalled shard.
    let busySince = Atomic<UInt64>(0)
    private var ingestor: Ingestor
    private let sink: any OutputSink
    private let store: any StateBackend
    private let journal: IngestJournal?
    private let acks: AckTracker
    private let finished = DispatchSemaphore(value: 0)
    private let log: Logger
    private let layout: TopicLayout
    private var applied: [String: UInt64] = [:]
    /// Users whose changes are not committed yet, and those changed by the batch at hand.
    private var pendingUsers: Set<String> = []
    private var batchUsers: Set<String> = []
    /// Users whose series wait in the outbox for the interval's commit (committed with the next
    /// commit of any scope: a batch commit takes them along).
    private var deferredUsers: Set<String> = []
    /// Series messages in the outbox not yet committed (counted as published once they are).
    private var heldSeries = 0
    private var pendingOutbox: [StateStore.OutboxItem] = []
    /// History rows (series points, alert transitions, timeline entries) of the pending outputs.
    private var pendingHistory: [HistoryRecord] = []
    /// Whether outputs are recorded in the care-team history (`--history-days` not `off`).
    private let recordsHistory: Bool
    private let historyDays: Int?
    /// Whether series points are published on MQTT (else only recorded).
    private let publishesSeries: Bool
    /// Weekly reports (nil without history or without a `report` block in the rules).
    private var reports: WeeklyReports?
    /// Weeks whose due marker is committed or pending, to be handed to `reportWorker` after the next commit.
    private var dueWeeks: Set<WeeklyReports.Due> = []
    /// Builds, keeps and publishes the weekly reports of the due weeks, off this thread.
    let reportWorker: ReportWorker
    /// Users whose last sample id changed since the last acknowledgement.
    private var pendingAcks: [String: String] = [:]
    /// Committed but not yet published acknowledgements, coalesced per user.
    private var committedAcks: [String: String] = [:]
    /// When to commit, release the journal and acknowledge (set when the thread starts).
    private var policy: ShardCommitPolicy
    private let acknowledge: (@Sendable (_ user: String, _ lastID: String) -> Void)?
    /// The copies of alerts and reports under the users' care teams.
    private var teamOutputs: TeamOutputs
    /// A user-day's series points, gathered into one message.
    private var bundler: SeriesBundler
    /// The FHIR copies of alerts and series (nil: `--fhir off`).
    private var fhir: FHIROutputs?
    /// Care-staff acknowledgements of alert instances (nil: commands are not taken).
    private let desk: AcknowledgementDesk?
    /// Care-staff silences (nil: none apply).
    private let silences: SilenceDesk?
    /// Care-staff timeline commands (nil: none are taken).
    private let timelines: TimelineDesk?
    /// Care-staff changes applied to the engine and not committed yet (their audit rows and
    /// announcing outputs go with the next commit), and the answers waiting for that commit.
    private var pendingAudited: [AuditedChange] = []
    private var pendingAnswers: [TimelineAnswer] = []
    /// Partition sessions waiting for the next successful commit (``ShardItem/durable(_:)``).
    private var durables: [CommitWaiter] = []
    /// Called when the store fenced a commit (partitioned input: the run stops, see ``Daemon/commitFenced()``).
    private let onFenced: (@Sendable () -> Void)?

    /// The care-staff desks whose commands a shard applies to its users (nil: that kind is not taken).
    struct StaffDesks: Sendable {
        var acknowledgements: AcknowledgementDesk?
        var silences: SilenceDesk?
        var timelines: TimelineDesk?
    }

    init(
        index: Int, ingestor: Ingestor, capacity: Int, sink: any OutputSink, store: any StateBackend, journal: IngestJournal?,
        acks: AckTracker, log: Logger, ackIntervalMs: Int = 0, commitIntervalMs: Int = 0,
        historyDays: Int? = 90, publishesSeries: Bool = true, careTeams: CareTeams = CareTeams(), fhir: Bool = false,
        desks: StaffDesks = StaffDesks(), onFenced: (@Sendable () -> Void)? = nil, acknowledge: (@Sendable (String, String) -> Void)? = nil
    ) {
        self.desk = desks.acknowledgements
        self.silences = desks.silences
        self.timelines = desks.timelines
        self.onFenced = onFenced
        self.acknowledge = acknowledge
        self.recordsHistory = historyDays != nil
        self.historyDays = historyDays
        self.publishesSeries = publishesSeries
        self.reports = WeeklyReports(program: ingestor.engine.program, historyDays: historyDays)
        self.policy = ShardCommitPolicy(
            intervalNs: UInt64(commitIntervalMs) * 1_000_000, ackIntervalNs: UInt64(ackIntervalMs) * 1_000_000,
            journaled: journal != nil, now: 0)
        self.index = index
        self.ingestor = ingestor
        self.queue = BoundedQueue(capacity: capacity)
        self.sink = sink
        self.store = store
        self.journal = journal
        self.acks = acks
        self.log = log
        self.layout = ingestor.layout
        self.teamOutputs = TeamOutputs(careTeams: careTeams, layout: ingestor.layout)
        self.bundler = SeriesBundler(layout: ingestor.layout)
        if fhir { self.fhir = FHIROutputs(program: ingestor.engine.program, root: ingestor.layout.root, observations: publishesSeries) }
        self.reportWorker = ReportWorker(index: index, store: store, sink: sink, layout: ingestor.layout, log: log)
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
        if !teams.isEmpty { teamOutputs.careTeams.setProfileTeams(teams, of: r.user) }
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
    private var gaugedFiring: (names: [String], counts: [Int])?

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

    /// Waits until the thread has drained a closed queue.
    func join() { finished.wait() }

    /// A week found due in the store at start (its marker committed before a stop or crash).
    func addDue(_ d: WeeklyReports.Due) { if reports != nil { dueWeeks.insert(d) } }

    /// Hands the due weeks to the report worker, which builds, keeps and publishes their reports,
    /// then prunes those users' history. Call only once their markers are durable. Weeks the
    /// worker refuses (it holds its capacity) stay due here and are handed over after the next
    /// commit; weeks it cannot build stay due there (their markers are in the store).
    private func handReports() {
        guard let reports, !dueWeeks.isEmpty else { return }
        // In week order, so that a refusal for capacity keeps a user's later weeks behind the earlier.
        let jobs = dueWeeks.sorted { ($0.week, $0.user) < ($1.week, $1.user) }.map { d in
            ReportWorker.Job(due: d, reports: reports, timeline: ingestor.engine.timeline(of: d.user), teams: teamOutputs.careTeams.teams(of: d.user))
        }
        dueWeeks.removeAll(keepingCapacity: true)
        for d in reportWorker.offer(jobs) { dueWeeks.insert(d) }
    }

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
        policy.started(now: DispatchTime.now().uptimeNanoseconds)  // the first interval runs from the start
        while next < taken.count || queue.waitForItems() {
            // One clock read per batch, not per message.
            let started = DispatchTime.now().uptimeNanoseconds
            busySince.store(started, ordering: .relaxed)
            if next >= taken.count {
                // Read before taking: every message up to it routed here is in the queue now.
                takenThrough = journal?.queuedThrough ?? 0
                queue.takeAll(into: &taken)
                next = 0
            }
            let wall = Timestamp(milliseconds: Int64(Date().timeIntervalSince1970 * 1000))
            var barriers: [DispatchSemaphore] = []
            var replayedNow = 0
            var teamsChanged = false
            var budget = BatchBudget()
            var lastSeq: UInt64 = 0
            batchUsers.removeAll(keepingCapacity: true)
            while next < taken.count, !budget.spent {
                // Moved out of the take (a copy retains every string and array of the item, and
                // emptying the array would release them again).
                var item = ShardItem.housekeeping
                swap(&item, &taken[next])
                next += 1
                switch consume item {
                case .message(let seq, let topic, let parsed, let payload):
                    budget.message(bytes: payload.count)
                    if seq > 0 { lastSeq = seq }
                    var user: String?
                    if case .inbound(let u, _) = parsed { user = u }
                    guard case .next(let position) = journalPosition(seq: seq, user: user) else { replayedNow += 1; continue }
                    // What an events message changes of the timeline is recorded (and its FHIR
                    // copies published): the entries it recorded or replaced, and those it retracted.
                    var timelineBefore: [TimelineEvent]?
                    if recordsHistory || fhir != nil, case .inbound(let u, .events) = parsed { timelineBefore = ingestor.engine.timeline(of: u) }
                    ingestor.handle(topic: topic, parsed: parsed, payload: payload, now: wall, into: &out)
                    if case .inbound(let u, .profile) = parsed, !payload.isEmpty { teamsChanged = profileTeams(u, payload) || teamsChanged }
                    handled(seq: seq, user: user, position: position)
                    if let before = timelineBefore, let u = user { timelineChanged(u, before: before) }
                case .decodedSamples(let seq, let topic, let user, let samples):
                    budget.message(bytes: BatchBudget.bytesPerDecodedSample * ((try? samples.get())?.count ?? 0))
                    if seq > 0 { lastSeq = seq }
                    guard case .next(let position) = journalPosition(seq: seq, user: user) else { replayedNow += 1; continue }
                    ingestor.handle(decodedSamples: samples, user: user, topic: topic, now: wall, into: &out)
                    handled(seq: seq, user: user, position: position)
                case .oversized(let topic, let parsed, let size):
                    ingestor.rejectOversized(topic: topic, parsed: parsed, size: size, into: &out)
                case .retained(let topic, let parsed):
                    ingestor.rejectRetained(topic: topic, parsed: parsed, into: &out)
                case .tick(let now): ingestor.tick(now: now, into: &out)
                case .reload(let p):
                    ingestor.engine.reload(p, now: wall, into: &out)  // resolves the removed rules' firing alerts
                    reports = WeeklyReports(program: p, historyDays: historyDays)
                    fhir?.reload(p)
                case .housekeeping: break
                case .barrier(let s): barriers.append(s)
                case .durable(let w): durables.append(w)
                case .acknowledge(let c, let taken):
                    desk?.acknowledge(c, instance: ingestor.engine.firingInstance(user: c.user, id: c.alert), now: wall)
                    taken?.signal()
                case .timeline(let r):
                    guard let timelines else {
                        r.answer.refuse(.init("store_unavailable", "this daemon takes no timeline commands", id: r.command.change.id, user: r.command.user))
                        continue
                    }
                    if let applied = timelines.apply(r, ingestor: &ingestor, wall: wall, fhir: fhir, into: &out) {
                        if recordsHistory { pendingHistory.append(applied.history) }
                        pendingAudited.append(applied.change)
                        pendingAnswers.append(r.answer)
                    }
                }
            }
            let evaluated = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            ingestor.engine.takeTouched(into: &batchUsers)
            // No reminders of acknowledged instances; the history still records what they said.
            let withheld = desk?.screen(&out) ?? []
            if recordsHistory { for a in withheld { pendingHistory.append(.alert(a)) } }
            pendingUsers.formUnion(batchUsers)
            var seriesMessages = 0  // published by this batch's commit (counted once committed)
            for var o in out {
                if case .series(let s) = o, publishesSeries, let done = bundler.add(s) {
                    pendingOutbox.append(done)
                    heldSeries += 1
                }
                // A silenced transition is recorded and marked; its notifications are withheld.
                var verdict: SilenceDesk.Verdict?
                if case .alert(var a) = o, let v = silences?.verdict(for: a, now: wall) { a.silencedBy = v.all; o = .alert(a); verdict = v }
                if !o.isSeries {
                    var items = Shard.outboxItems(o, layout: layout)
                    if case .alert(let a) = o { items += teamOutputs.alertItems(a, userItems: items) }
                    if let verdict, case .alert(let a) = o { silences?.withhold(verdict, a, items: &items) }
                    pendingOutbox += items
                    // The FHIR copies are the record for a clinical system: a silence withholds none.
                    if let fhir { pendingOutbox += fhir.items(o) }
                } else if publishesSeries, let fhir {
                    pendingOutbox += fhir.items(o)
                }
                if recordsHistory { if let h = Shard.historyRecord(o) { pendingHistory.append(h) } }
                if reports != nil, case .series(let s) = o, let week = WeeklyReports.closes(s) {
                    let due = WeeklyReports.Due(user: s.user, week: week)
                    if dueWeeks.insert(due).inserted { pendingHistory.append(WeeklyReports.marker(due)) }
                }
            }
            if let done = bundler.finish() {
                pendingOutbox.append(done)
                heldSeries += 1
            }
            // Series wait for the interval's commit (nobody waits for them); other outputs commit now.
            let urgent = teamsChanged || !pendingAudited.isEmpty || out.contains { !$0.isSeries }
            if !urgent && !out.isEmpty { deferredUsers.formUnion(batchUsers) }
            let scope = policy.batchProcessed(
                outputs: urgent, deferred: !pendingOutbox.isEmpty || !deferredUsers.isEmpty, barrier: !barriers.isEmpty,
                pendingUsers: pendingUsers.count, now: started)
            if scope == .batch { batchUsers.formUnion(deferredUsers) }  // the waiting series' users, with their outputs
            // Every message up to q routed here is handled: all of the take once it is through
            // (the queue's mark), else up to the last journalled message handled (a shard's queue
            // is in journal order).
            handledThrough = max(handledThrough, next >= taken.count ? takenThrough : lastSeq)
            let q = handledThrough
            // Group commit: with scope .none these changes go with a later batch's; the journal
            // holds their messages meanwhile.
            var committed: [StateStore.OutboxItem]?
            var failures = 0
            if scope != .none {
                committed = commit(all: scope == .all)
                if let items = committed {
                    let done = policy.commitSucceeded(pendingUsersLeft: pendingUsers.count)
                    if done.releaseJournal { committedThrough.store(q, ordering: .relaxed) }
                    if scope == .all { for w in durables { w.committed() }; durables.removeAll(keepingCapacity: true) }
                    if !items.isEmpty { failures = sink.publish(items) }
                    seriesMessages = heldSeries
                    heldSeries = 0
                    if !dueWeeks.isEmpty && pendingHistory.isEmpty {
                        handReports()  // their markers are durable
                    } else if reportWorker.isFailing {
                        reportWorker.poke()  // the store takes commits again: the worker's weeks are tried again
                    }
                    // Durable now: tell gateways how far each user's samples are committed — coalesced:
                    // at most one retained ack per user per interval (an ack per message would double
                    // the broker's load at one sample per message).
                    acksDurable(done.durableAcks)
                    if policy.acknowledgementsDurable(waiting: acknowledge != nil && !committedAcks.isEmpty, now: started) { publishAcks() }
                } else {
                    policy.commitFailed()
                }
            }
            let took = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            stats.withLock { s in
                s.batches += 1
                s.evaluationSeconds += evaluated
                s.longestBatchSeconds = max(s.longestBatchSeconds, took)
                s.ingest = ingestor.counters
                s.users = ingestor.engine.userCount
                s.publishErrors += failures
                s.seriesPublished += seriesMessages
                s.outputsUncommitted = pendingOutbox.count
                s.replayed += replayedNow
                s.reportsDueInShard = dueWeeks.count
                if scope != .none {
                    s.storeHealthy = committed != nil
                    if committed != nil { s.commits += 1 } else { s.commitFailures += 1 }
                }
                for o in out {
                    switch o {
                    case .alert(let a):
                        if a.isRepeat { s.repeats[a.rule, default: 0] += 1; continue }
                        s.alerts[a.rule, default: [:]][a.status, default: 0] += 1
                    case .series: break
                    case .rejected: break
                    }
                }
            }
            updateFiring()
            out.removeAll(keepingCapacity: true)
            for b in barriers { b.signal() }
            busySince.store(0, ordering: .relaxed)
        }
        // Closed: one last attempt to commit what is pending.
        busySince.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
        policy.closed()  // commit everything
        // The queue is closed and empty: every message up to q routed here has been taken.
        let q = journal?.queuedThrough ?? 0
        if let items = commit() {
            _ = policy.commitSucceeded(pendingUsersLeft: pendingUsers.count)
            if journal != nil { committedThrough.store(q, ordering: .relaxed) }
            if !items.isEmpty { _ = sink.publish(items) }
            stats.withLock { [heldSeries, left = pendingOutbox.count] in
                $0.seriesPublished += heldSeries
                $0.outputsUncommitted = left
            }
            heldSeries = 0
            for (u, id) in pendingAcks { committedAcks[u] = id }
            for w in durables { w.committed() }
            if !dueWeeks.isEmpty && pendingHistory.isEmpty { handReports() }
        } else {
            policy.commitFailed()
            for w in durables { w.failed() }
        }
        // The worker's last attempt at the weeks it holds; what it cannot build stays due for the next start.
        reportWorker.finish()
        if policy.acknowledgementsDurable(waiting: acknowledge != nil && !committedAcks.isEmpty, now: DispatchTime.now().uptimeNanoseconds) {
            publishAcks()
        }
        finished.signal()
    }

    /// Where a journalled message stands against its user's journal position.
    private enum JournalPosition {
        /// Applied before a restart: skipped.
        case applied
        /// To apply; the index of the user's position when the user has one (one hash of the
        /// user for reading and moving it).
        case next(Dictionary<String, UInt64>.Index?)
    }

    @inline(__always)
    private func journalPosition(seq: UInt64, user: String?) -> JournalPosition {
        guard seq > 0, let u = user, let p = applied.index(forKey: u) else { return .next(nil) }
        return seq <= applied.values[p] ? .applied : .next(p)
    }

    /// After a message was handled: moves its user's journal position, notes the user as changed
    /// by the batch, and the last sample id to acknowledge after the commit that applies it
    /// (docs/mqtt-api.md).
    @inline(__always)
    private func handled(seq: UInt64, user: String?, position: Dictionary<String, UInt64>.Index?) {
        guard let u = user else { return }
        if seq > 0 {
            if let position { applied.values[position] = seq } else { applied[u] = seq }
            batchUsers.insert(u)
        }
        if let id = ingestor.lastMessageSampleID { pendingAcks[u] = id }
    }

    /// Records what an events message changed of `user`'s timeline (`before`: the timeline before
    /// it): the entries it recorded or replaced, and the removal of those it retracted, in the
    /// history and, with `--fhir on`, as Observations. Entries it left as they were keep their rows
    /// (and the attribution of the staff who entered them).
    private func timelineChanged(_ user: String, before: [TimelineEvent]) {
        let after = ingestor.engine.timeline(of: user)
        guard after != before else { return }
        let held = Dictionary(before.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        let kept = Set(after.map(\.id))
        for e in after where held[e.id] != e {
            if recordsHistory { pendingHistory.append(.timeline(user: user, e)) }
            if let fhir { pendingOutbox += fhir.timelineItems(user: user, entry: e, retracted: false) }
        }
        for e in before where !kept.contains(e.id) {
            if recordsHistory { pendingHistory.append(.retracted(user: user, id: e.id)) }
            if let fhir { pendingOutbox += fhir.timelineItems(user: user, entry: e, retracted: true) }
        }
    }

    /// Applies the care teams of an accepted profile (the ingestor rejected a bad one, and counted
    /// it); returns whether the change queued team outputs.
    private func profileTeams(_ user: String, _ payload: [UInt8]) -> Bool {
        guard case .success(let p) = ingestor.decoder.userProfile(payload) else { return false }
        // The user's teams change: the weeks the worker holds come back here, after its attempt under
        // way, and are handed over again with the new teams after this batch's commit.
        if (teamOutputs.careTeams.assigned[user] ?? p.careTeams) != teamOutputs.careTeams.teams(of: user) {
            for d in reportWorker.withdraw(user: user) { dueWeeks.insert(d) }
        }
        let items = teamOutputs.profileTeams(p.careTeams, user: user, rules: ingestor.engine.alertNames) {
            guard reports != nil else { return nil }
            return (try? store.weeklyReport(of: user, week: nil))?.payload
        }
        pendingOutbox += items
        return !items.isEmpty
    }

    /// Moves the pending acknowledgements of the users just committed (everyone's, or this batch's) to the durable ones.
    private func acksDurable(_ scope: ShardCommitPolicy.Scope) {
        if scope == .all {
            if acknowledge != nil { for (u, id) in pendingAcks { committedAcks[u] = id } }
            pendingAcks.removeAll(keepingCapacity: true)
        } else {
            for u in batchUsers { if let id = pendingAcks.removeValue(forKey: u), acknowledge != nil { committedAcks[u] = id } }
        }
    }

    /// Publishes the coalesced durable acknowledgements (the policy said when).
    private func publishAcks() {
        guard let acknowledge else { return }
        for (u, id) in committedAcks { acknowledge(u, id) }
        committedAcks.removeAll(keepingCapacity: true)
    }

    /// Commits pending users and outputs with the acknowledged outbox ids; returns the committed
    /// outbox items (with ids), or nil when the store refused (everything stays pending).
    /// - Parameter all: every pending user, or only this batch's (the users whose changes
    ///   produced this batch's outputs: an alert is not held up by a commit of everyone else).
    private func commit(all: Bool = true) -> [StateStore.OutboxItem]? {
        let acked = acks.drain()
        let users = all ? pendingUsers : batchUsers
        if users.isEmpty && pendingOutbox.isEmpty && acked.isEmpty && pendingHistory.isEmpty && pendingAudited.isEmpty { return [] }
        let records = users.map { u in
            StateStore.UserRecord(
                user: u, appliedSeq: applied[u, default: 0], eventNow: ingestor.clocks[u]?.now,
                eventClaims: ingestor.clocks[u]?.claims ?? [], state: ingestor.engine.changes(of: u))
        }
        do {
            let ids: [Int64], announced: [StateStore.OutboxItem]
            if pendingAudited.isEmpty {
                ids = try store.commit(users: records, outbox: pendingOutbox, acknowledged: acked, history: pendingHistory)
                announced = []
            } else {
                (ids, announced) = try store.commit(
                    users: records, outbox: pendingOutbox, acknowledged: acked, history: pendingHistory, audited: pendingAudited)
            }
            // Moved out, not copied: assigning the ids to a copy of the pending array copied every item.
            var items: [StateStore.OutboxItem] = []
            swap(&items, &pendingOutbox)
            pendingOutbox.reserveCapacity(items.count)
            for k in items.indices { items[k].id = ids[k] }
            items += announced
            pendingAudited.removeAll()
            for a in pendingAnswers { a.committed() }
            pendingAnswers.removeAll()
            for u in users { ingestor.engine.markPersisted(u) }
            if all { pendingUsers.removeAll(keepingCapacity: true) } else { pendingUsers.subtract(users) }
            deferredUsers.removeAll(keepingCapacity: true)  // their outputs are committed (all or with this batch)
            pendingOutbox.removeAll(keepingCapacity: true)
            pendingHistory.removeAll(keepingCapacity: true)
            return items
        } catch {
            acks.restore(acked)
            if (error as? PostgresError)?.code == .fenced, let onFenced {
                onFenced()  // the run stops (logged once there); its outputs are never published
                return nil
            }
            log.error("state commit failed; holding outputs until the store accepts them", ["shard": String(index), "error": "\(error)"])
            return nil
        }
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

    /// A commit is at most this many users, whatever the interval.
    static let maxPendingUsers = ShardCommitPolicy.maxPendingUsers

    /// What a batch commits (``ShardCommitPolicy/scope(outputs:earlierOutputs:barrier:journaled:pendingUsers:sinceLastCommitNs:intervalNs:)``).
    static func commitScope(
        outputs: Bool, earlierOutputs: Bool, barrier: Bool, journaled: Bool, pendingUsers: Int,
        sinceLastCommitNs: UInt64, intervalNs: UInt64
    ) -> CommitScope {
        ShardCommitPolicy.scope(
            outputs: outputs, earlierOutputs: earlierOutputs, barrier: barrier, journaled: journaled,
            pendingUsers: pendingUsers, sinceLastCommitNs: sinceLastCommitNs, intervalNs: intervalNs)
    }

    /// What a batch commits.
    typealias CommitScope = ShardCommitPolicy.Scope

    /// The history row of an output (rejections are not history).
    static func historyRecord(_ o: EngineOutput) -> HistoryRecord? {
        switch o {
        case .alert(let a): .alert(a)
        case .series(let s): .series(s)
        case .rejected: nil
        }
    }

    /// The outbox form of an alert or rejection: alerts retained while firing, cleared after resolving.
    static func outboxItems(_ o: EngineOutput, layout: TopicLayout) -> [StateStore.OutboxItem] {
        switch o {
        case .alert(let a):
            let topic = layout.alert(a.user, rule: a.rule)
            if a.status == .firing { return [.init(topic: topic, payload: a.jsonBytes, retain: true)] }
            return [.init(topic: topic, payload: a.jsonBytes, retain: false), .init(topic: topic, payload: [], retain: true)]
        case .series: return []  // a user-day's series leave together: SeriesBundler
        case .rejected(let user, let topic, let r):
            return [
                .init(topic: user.map { layout.rejected($0) } ?? layout.rejectedUnknown, payload: r.jsonBytes(user: user, topic: topic), retain: false)
            ]
        }
    }
}
