import CareReports
import Foundation
import MobilityModel
import MobilityWire
import StateStore
import Synchronization

/// Builds a shard's weekly digests on a thread of its own, off the shard's critical path.
///
/// After the commit that made a week's due marker durable the shard hands the week over with
/// everything the build needs of the shard's state (a ``Job``: the user's timeline, the user's care
/// teams, the report spec), so the worker never touches the engine. The worker builds the digests
/// of everything it holds, in week order (then user), from the store's history; commits them in
/// one ``StateBackend/commitReports(outbox:history:prune:)`` (the reports replace their markers,
/// the users' history is pruned); publishes them; and counts them.
///
/// A build or commit that fails keeps every week it holds (their markers stay in the store) and is
/// tried again after the shard's next successful commit (``poke()``) or after a backoff (1 s,
/// doubling to 30 s): no busy loop, no lost week. A fenced commit (another instance owns a
/// partition) publishes nothing and stops retrying; the run stops (``Shard/onFenced``).
///
/// Holding at most ``capacity`` weeks, ``offer(_:)`` refuses the rest: the shard keeps them due and
/// offers them again after its next commit (their markers are durable either way).
///
/// Sendability: every stored `var` is read and written only while holding `condition`, except
/// `counted`, `onFenced` and `maxWeeksPerAttempt`, which are set before ``start()`` and only read after it.
final class ReportWorker: @unchecked Sendable {
    /// A due week and what its build needs of the shard's state when it was handed over.
    struct Job: Sendable {
        var due: WeeklyReports.Due
        /// The rule set's reports when the week was handed over.
        var reports: WeeklyReports
        /// The user's engine timeline (the baseline's clinical event, what the prune keeps).
        var timeline: [TimelineEvent]
        /// The user's care teams (the report's team copies).
        var teams: [String]
    }

    /// What an attempt came to.
    enum Outcome { case built, failed, fenced }

    private let index: Int
    private let store: any StateBackend
    private let sink: any OutputSink
    private let layout: TopicLayout
    private let log: Logger
    /// At most this many weeks are held (``offer(_:)``).
    let capacity: Int
    /// At most this many weeks are built in one attempt (one transaction), the earliest first
    /// (set before ``start()``).
    var maxWeeksPerAttempt = 256
    private let condition = NSCondition()
    private let finished = DispatchSemaphore(value: 0)
    /// The weeks held, each with its latest job and the offer that made it (see `run`).
    private var pending: [WeeklyReports.Due: (job: Job, offer: UInt64)] = [:]
    private var offers: UInt64 = 0
    private var building = false
    private var closed = false
    private var started = false
    /// A successful commit since the last failed attempt: the store may accept the reports again.
    private var poked = false
    /// The last attempt failed (the shard pokes after its next commit).
    private var failing = false
    /// `failing`, for the shard to read after each commit without taking the lock.
    private let failingNow = Atomic<Bool>(false)
    private var fenced = false
    /// Counts what one attempt built and how many publishes failed; reports the weeks still held
    /// (set before ``start()``).
    var counted: (@Sendable (_ built: Int, _ publishErrors: Int, _ waiting: Int) -> Void)?
    /// Called when the store fenced a commit of reports (partitioned input; set before ``start()``).
    var onFenced: (@Sendable () -> Void)?

    /// The monotonic clock of the backoff after a failed attempt.
    private let clock: DaemonClock

    init(
        index: Int, store: any StateBackend, sink: any OutputSink, layout: TopicLayout, log: Logger, capacity: Int = 10_000,
        clock: DaemonClock = .system
    ) {
        self.index = index
        self.clock = clock
        self.store = store
        self.sink = sink
        self.layout = layout
        self.log = log
        self.capacity = capacity
    }

    /// Starts the thread.
    func start() {
        condition.lock()
        started = true
        condition.unlock()
        let t = ThreadName.thread("reports-\(index)") { [self] in run() }
        t.start()
    }

    /// Hands weeks over; returns those refused because ``capacity`` weeks are held (the caller
    /// keeps them due). A week held already takes the newer job.
    func offer(_ jobs: [Job]) -> [WeeklyReports.Due] {
        condition.lock()
        defer { condition.unlock() }
        var refused: [WeeklyReports.Due] = []
        offers += 1
        for j in jobs {
            if pending[j.due] == nil && pending.count >= capacity {
                refused.append(j.due)
                continue
            }
            pending[j.due] = (j, offers)
        }
        poked = true
        counted?(0, 0, pending.count)
        condition.broadcast()
        return refused
    }

    /// Whether the last attempt failed: the shard then ``poke()``s after each successful commit.
    var isFailing: Bool { failingNow.load(ordering: .relaxed) }

    /// Tries the held weeks again now (the shard committed: the store accepts writes again).
    func poke() {
        condition.lock()
        poked = true
        condition.broadcast()
        condition.unlock()
    }

    /// Takes back the weeks of `user` not built yet, after the attempt under way (if any) is over:
    /// the user's care teams are changing, and a report must neither reach a team after it left
    /// nor miss one that joined. The shard keeps them due and hands them over after its next commit.
    func withdraw(user: String) -> [WeeklyReports.Due] {
        condition.lock()
        defer { condition.unlock() }
        while building { condition.wait() }
        let mine = pending.keys.filter { $0.user == user }
        for d in mine { pending.removeValue(forKey: d) }
        if !mine.isEmpty { counted?(0, 0, pending.count) }
        return mine
    }

    /// Stops after one last attempt at what it holds (the shard stopped: nothing more is handed
    /// over); what that attempt cannot build stays due for the next start. Waits for the thread.
    func finish() {
        condition.lock()
        closed = true
        let wasStarted = started
        condition.broadcast()
        condition.unlock()
        if wasStarted { finished.wait() }
    }

    private func run() {
        var backoff: UInt64 = 0  // ns
        var retryAt: UInt64 = 0  // the end of the backoff after a failed attempt, uptime ns (a wake-up does not restart it)
        condition.lock()
        while true {
            // Work: weeks held, and no failed attempt waiting for a poke, its backoff or the close.
            while !closed && (pending.isEmpty || fenced || (failing && !poked)) {
                if failing && !fenced && !pending.isEmpty {
                    let now = clock.uptimeNanoseconds()
                    if now >= retryAt { break }  // the backoff is over
                    // Looks at the clock again at least every 50 ms (it is the one given, which a test moves).
                    _ = condition.wait(until: Date(timeIntervalSinceNow: Double(min(retryAt - now, Self.backoffCheckNs)) / 1e9))
                } else {
                    condition.wait()
                }
            }
            if pending.isEmpty || fenced { break }  // closed (or fenced: nothing more is published)
            poked = false
            // The earliest weeks first, at most `maxWeeksPerAttempt` (a withdraw waits for one attempt,
            // and its transaction holds the store's write lock); the rest go with the next attempt,
            // at once (they are still pending).
            let batch = pending.values.sorted { ($0.job.due.week, $0.job.due.user) < ($1.job.due.week, $1.job.due.user) }
                .prefix(maxWeeksPerAttempt)
            building = true
            condition.unlock()
            let (outcome, built, errors) = attempt(batch.map(\.job))
            condition.lock()
            building = false
            switch outcome {
            case .built:
                // A week offered again during the attempt (a newer job) is built again.
                for b in batch where pending[b.job.due]?.offer == b.offer { pending.removeValue(forKey: b.job.due) }
                failing = false
                backoff = 0
            case .failed:
                failing = true
                backoff = min(max(backoff * 2, Self.firstBackoffNs), Self.longestBackoffNs)
                retryAt = clock.uptimeNanoseconds() + backoff
            case .fenced:
                fenced = true
            }
            failingNow.store(failing, ordering: .relaxed)
            counted?(built, errors, pending.count)
            condition.broadcast()  // a withdraw waits for the attempt
            if closed && outcome != .built { break }  // one last attempt only
        }
        condition.unlock()
        finished.signal()
    }

    /// The backoff after a failed attempt: 1 s, doubling to 30 s.
    static let firstBackoffNs: UInt64 = 1_000_000_000, longestBackoffNs: UInt64 = 30_000_000_000
    /// How long a backoff waits at most before it reads its clock again.
    private static let backoffCheckNs: UInt64 = 50_000_000

    /// Builds, commits and publishes the weeks of `jobs` (in week order); on failure nothing is
    /// committed or published and the weeks stay due.
    private func attempt(_ jobs: [Job]) -> (Outcome, built: Int, publishErrors: Int) {
        var rows: [HistoryRecord] = [], items: [StateStore.OutboxItem] = [], prune: [HistoryPrune] = []
        rows.reserveCapacity(jobs.count)
        prune.reserveCapacity(jobs.count)
        for j in jobs {
            let d = j.due
            do {
                let payload = try j.reports.digest(d, timeline: j.timeline, store: store).jsonBytes
                rows.append(HistoryRecord(user: d.user, kind: .weekly, key: d.week.description, day: d.week.monday, payload: payload))
                items.append(.init(topic: layout.weeklyReport(d.user), payload: payload, retain: true))
                items += TeamOutputs.reportItems(teams: j.teams, user: d.user, payload: payload, layout: layout)
                prune.append((d.user, j.reports.keepFrom(d, timeline: j.timeline), d.week.monday - WeeklyReports.reportDays))
            } catch {
                log.error("cannot build a weekly report; it stays due", ["shard": String(index), "error": "\(error)"])
                return (.failed, 0, 0)
            }
        }
        do {
            let ids = try store.commitReports(outbox: items, history: rows, prune: prune)  // one transaction (SQLite)
            for k in items.indices { items[k].id = ids[k] }
        } catch {
            if isFencedWrite(error), let onFenced {
                onFenced()  // the run stops (logged once there); these reports are never published
                return (.fenced, 0, 0)
            }
            log.error("cannot store weekly reports; they stay due", ["shard": String(index), "error": "\(error)"])
            return (.failed, 0, 0)
        }
        return (.built, rows.count, sink.publish(items))
    }
}
