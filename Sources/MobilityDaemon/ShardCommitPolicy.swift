/// A shard's group-commit and acknowledgement policy as a state machine: the shard reports what
/// happened (a batch was processed, its commit succeeded or failed, the queue closed) and gets
/// back what to do (commit everyone, this batch's users or nobody; release the journal; which
/// acknowledgements became durable; whether to publish them now). It holds no users, outputs or
/// clock: times are arguments (uptime ns), so it is tested with tables, without threads or SQLite.
///
/// Group commit: at 35 k single-sample messages a second, a commit per batch wrote ~6 KB of pages
/// per message. What may wait for a later commit depends on what keeps the messages until theirs
/// (``Keeper``). With the ingest journal, outputs (alerts, series and rejections are published only
/// once committed) are committed at once with the users whose changes made them — except series,
/// which nobody waits for within the interval: a batch whose only outputs are series leaves them
/// to the interval's commit of everyone (a backfill closes a day every few messages, and would
/// commit each time); a batch with other outputs takes the waiting series' users along.
/// Everyone's changes are committed once the interval has passed, for a barrier (a caller waits
/// for durability), and after a failed commit that held outputs. A JetStream partition's stream
/// keeps its batch until the batch's commit waiter is answered, as the journal does, so those
/// hand-offs wait for the interval's commit too (the shard wakes for it, ``commitDueInNs(now:)``):
/// every partition of the shard that handed in within an interval shares one transaction; but
/// what commits is always everyone, since a stream position goes only with every user. A
/// hand-off with more input waiting behind it (``CommitWaiter/backlog``: at the broker, which the
/// partition fetches only after this commit) commits at once, once its waiter has come: the
/// interval would otherwise bound a draining partition to one batch an interval. With
/// nothing keeping the messages (an MQTT partition session), every batch commits everything.
/// Without a journal, messages are committed only together with the commit waiter their input
/// hands in behind them (the two pushed at once: ``BoundedQueue/pushAll(_:)``, so nothing of
/// another hand-off comes between): a batch that holds messages whose waiter has not come yet
/// (a batch's budget split the hand-off) waits for it, so that a partition's batch, and the
/// stream position its waiter carries, are one commit.
struct ShardCommitPolicy: Sendable {
    /// What keeps a shard's messages until they are committed: what decides whether a commit may wait.
    enum Keeper: Equatable, Sendable {
        /// The ingest journal (the single-node daemon): changes without outputs wait for the
        /// interval's commit; outputs go at once with the users that made them.
        case journal
        /// A JetStream partition's stream, which keeps its batch until the batch's commit waiter
        /// is answered: everything waits for the interval's commit, but outputs, a barrier and a
        /// hand-off with more input waiting behind it commit at once — and always everyone, since
        /// a stream position is committed only with every user of the shard.
        case stream
        /// Nothing (an MQTT partition session, one message in flight until its commit, or a
        /// shard fed without waiters): every batch commits everything.
        case none
    }

    /// What a batch commits.
    enum Scope: Equatable, Sendable {
        /// Nothing: a later batch commits these changes with its own.
        case none
        /// The users this batch changed, with its outputs (the journal keeps everything older
        /// than the other pending users' changes until they are committed).
        case batch
        /// Every pending user.
        case all
    }

    /// What to do once a commit has succeeded.
    struct Committed: Equatable, Sendable {
        /// The journal may drop what was routed to the shard up to the position read before the
        /// batch (no user's changes wait any more).
        var releaseJournal: Bool
        /// Whose pending acknowledgements are durable now: every user's (`.all`) or only this
        /// batch's users' (`.batch`).
        var durableAcks: Scope
    }

    /// A commit is at most this many users, whatever the interval.
    static let maxPendingUsers = 50_000

    /// The longest a stream's partition waits, for its batch's commit or before its next fetch,
    /// whatever `--commit-interval` says: far below the stall bound (a partition without
    /// progress that long counts as cut off) and JetStream's `ack_wait`.
    static let longestStreamWaitMs = 1000

    private enum State: Equatable, Sendable {
        /// Between batches.
        case idle
        /// A batch's commit of this scope is in progress; `barrier`: a caller waits for it.
        case committing(Scope, barrier: Bool)
        /// The queue is closed: the last commit (of everything) and a forced acknowledgement.
        case closing
    }

    private var state = State.idle
    /// Outputs of a failed commit wait in the outbox: the next batch commits everything, in order.
    private var outputsHeld = false
    /// The last commit failed: the shard does not wake for the interval; the next item an
    /// interval after the failure (housekeeping's, every 500 ms) retries it.
    private var failing = false
    private var lastCommitNs: UInt64
    private var lastAckPublishNs: UInt64 = 0
    /// `--commit-interval` in ns (0: every batch commits everything).
    let intervalNs: UInt64
    /// `--ack-interval` in ns.
    let ackIntervalNs: UInt64
    /// What keeps the messages until their commit.
    let keeper: Keeper

    /// A policy whose first commit interval runs from `now`.
    /// - Parameters:
    ///   - intervalNs: `--commit-interval` (0: every batch commits everything); with `.stream`, at
    ///     most ``longestStreamWaitMs``.
    ///   - ackIntervalNs: `--ack-interval`: at most one acknowledgement per user per interval.
    ///   - keeper: what holds messages until their commit.
    init(intervalNs: UInt64, ackIntervalNs: UInt64, keeper: Keeper, now: UInt64) {
        self.intervalNs = keeper == .stream ? min(intervalNs, UInt64(Self.longestStreamWaitMs) * 1_000_000) : intervalNs
        self.ackIntervalNs = ackIntervalNs
        self.keeper = keeper
        self.lastCommitNs = now
    }

    /// With changes waiting in a shard fed by streams: how long until the interval's commit is
    /// due (at least 1 ms), for the shard's wait on its queue; nil when only its queue wakes it
    /// (the journal's changes are committed by the next item, a tick or housekeeping's every
    /// 500 ms, and so is a failed commit's retry).
    func commitDueInNs(now: UInt64) -> UInt64? {
        guard keeper == .stream, state == .idle, !failing else { return nil }
        let since = now &- lastCommitNs
        return since >= intervalNs ? 1_000_000 : max(1_000_000, intervalNs - since)
    }

    /// A batch was processed at `now`; returns what to commit. Unless `.none`, report the
    /// result with `commitSucceeded` or `commitFailed`.
    /// - Parameters:
    ///   - outputs: the batch produced outputs that are published at once (alerts, rejections,
    ///     team copies).
    ///   - deferred: outputs that may wait for the interval (series) are pending, this batch's or
    ///     earlier ones'; they go with the next commit of any scope.
    ///   - barrier: the batch holds a barrier.
    ///   - pendingUsers: users with uncommitted changes, this batch's included.
    ///   - awaitingWaiter: messages were taken whose commit waiter has not come yet (no journal).
    ///   - backlog: a commit waiter taken since the last commit of everyone has more input
    ///     waiting behind it (``CommitWaiter/backlog``).
    mutating func batchProcessed(
        outputs: Bool, deferred: Bool = false, barrier: Bool, pendingUsers: Int, awaitingWaiter: Bool = false, backlog: Bool = false, now: UInt64
    ) -> Scope {
        precondition(state == .idle, "a batch while a commit is in progress or after closing")
        let scope = Self.scope(
            outputs: outputs, earlierOutputs: outputsHeld, barrier: barrier, keeper: keeper,
            pendingUsers: pendingUsers, awaitingWaiter: awaitingWaiter, backlog: backlog, sinceLastCommitNs: now &- lastCommitNs,
            intervalNs: intervalNs)
        if scope == .all { lastCommitNs = now }
        if scope != .none {
            state = .committing(scope, barrier: barrier)
            outputsHeld = outputsHeld || outputs || deferred
        }
        return scope
    }

    /// The shard's thread started at `now`: the first commit interval runs from here.
    mutating func started(now: UInt64) {
        lastCommitNs = now
    }

    /// The queue closed: everything pending is committed once more (report the result, then
    /// ask `acknowledgementsDurable`, which publishes whatever is durable whatever the interval).
    mutating func closed() {
        state = .closing
    }

    /// The commit reported last succeeded; `pendingUsersLeft` users still have uncommitted changes.
    mutating func commitSucceeded(pendingUsersLeft: Int) -> Committed {
        (outputsHeld, failing) = (false, false)
        switch state {
        case .committing(let scope, _):
            return Committed(releaseJournal: pendingUsersLeft == 0, durableAcks: scope)
        case .closing:
            return Committed(releaseJournal: false, durableAcks: .all)
        case .idle:
            preconditionFailure("a commit result without a commit")
        }
    }

    /// The commit reported last failed: everything stays pending (its outputs included), and
    /// nothing is acknowledged (unless closing).
    mutating func commitFailed() {
        precondition(state != .idle, "a commit result without a commit")
        failing = true
        if state != .closing { state = .idle }
    }

    /// After a successful commit: whether to publish the durable acknowledgements now (`waiting`:
    /// there are any). At most one round per ack interval, except for a barrier or when closing.
    mutating func acknowledgementsDurable(waiting: Bool, now: UInt64) -> Bool {
        let force: Bool
        switch state {
        case .committing(_, let barrier): force = barrier; state = .idle
        case .closing: force = true
        case .idle: preconditionFailure("acknowledgements without a commit")
        }
        guard waiting, force || now &- lastAckPublishNs >= ackIntervalNs else { return false }
        lastAckPublishNs = now
        return true
    }

    /// The batch's commit scope from its facts (the policy's one rule, kept pure for tables).
    static func scope(
        outputs: Bool, earlierOutputs: Bool, barrier: Bool, keeper: Keeper, pendingUsers: Int, awaitingWaiter: Bool = false, backlog: Bool = false,
        sinceLastCommitNs: UInt64, intervalNs: UInt64
    ) -> Scope {
        // The rest of the hand-off, and its waiter, are already on their way.
        if keeper != .journal && awaitingWaiter && !barrier { return .none }
        // A partition with more input waiting fetches it only after this commit: the interval
        // gathers small hand-offs, and waiting for it would only idle a full one.
        if intervalNs == 0 || keeper == .none || barrier || earlierOutputs || (backlog && keeper == .stream) || sinceLastCommitNs >= intervalNs
            || pendingUsers >= maxPendingUsers
        {
            return .all
        }
        if !outputs { return .none }
        return keeper == .journal ? .batch : .all
    }
}
