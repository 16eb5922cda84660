import Testing

@testable import MobilityDaemon

/// The shard's commit policy as events in, actions out: no threads, no SQLite, no clock.
@Suite struct ShardCommitPolicyTests {
    static let ms: UInt64 = 1_000_000

    /// One event for the policy, and what it must answer.
    enum Step: CustomStringConvertible, Sendable {
        /// A batch at `at` ms; expects this commit scope.
        case batch(
            at: UInt64, outputs: Bool = false, deferred: Bool = false, barrier: Bool = false, users: Int = 1, backlog: Bool = false,
            expect: ShardCommitPolicy.Scope)
        /// The commit succeeded with `left` users still pending; expects journal release and the durable acks' scope.
        case succeeded(left: Int = 0, release: Bool, acks: ShardCommitPolicy.Scope)
        case failed
        /// Acknowledgements at `at` ms (`waiting`: some are durable); expects whether to publish.
        case acks(at: UInt64, waiting: Bool = true, publish: Bool)
        case close

        var description: String {
            switch self {
            case .batch(let at, let o, let d, let b, let u, let l, let e):
                "batch(at: \(at), outputs: \(o), deferred: \(d), barrier: \(b), users: \(u), backlog: \(l)) → \(e)"
            case .succeeded(let l, let r, let a): "succeeded(left: \(l)) → release \(r), acks \(a)"
            case .failed: "failed"
            case .acks(let at, let w, let p): "acks(at: \(at), waiting: \(w)) → \(p)"
            case .close: "close"
            }
        }
    }

    /// Runs the steps against a policy (100 ms commit interval, 250 ms ack interval, journalled,
    /// started at 0 ms, which is 1 s of uptime as in a real shard) and checks every answer.
    static func run(_ steps: [Step], interval: UInt64 = 100, keeper: ShardCommitPolicy.Keeper = .journal) {
        let base: UInt64 = 1000
        var p = ShardCommitPolicy(intervalNs: interval * ms, ackIntervalNs: 250 * ms, keeper: keeper, now: 0)
        p.started(now: base * ms)
        for (i, step) in steps.enumerated() {
            switch step {
            case .batch(let at, let outputs, let deferred, let barrier, let users, let backlog, let expect):
                #expect(
                    p.batchProcessed(outputs: outputs, deferred: deferred, barrier: barrier, pendingUsers: users, backlog: backlog, now: (base + at) * ms)
                        == expect,
                    "step \(i): \(step)")
            case .succeeded(let left, let release, let acks):
                #expect(p.commitSucceeded(pendingUsersLeft: left) == .init(releaseJournal: release, durableAcks: acks), "step \(i): \(step)")
            case .failed: p.commitFailed()
            case .acks(let at, let waiting, let publish):
                #expect(p.acknowledgementsDurable(waiting: waiting, now: (base + at) * ms) == publish, "step \(i): \(step)")
            case .close: p.closed()
            }
        }
    }

    static let scenarios: [(String, [Step])] = [
        (
            "state changes wait within the interval, then everything is committed",
            [
                .batch(at: 5, expect: .none),
                .batch(at: 50, users: 3, expect: .none),
                .batch(at: 100, users: 3, expect: .all), .succeeded(release: true, acks: .all), .acks(at: 100, publish: true),
                .batch(at: 150, expect: .none)  // the interval restarts at the commit of everything
            ]
        ),
        (
            "outputs are committed at once with their users; the journal waits for the others",
            [
                .batch(at: 5, users: 2, expect: .none),
                .batch(at: 10, outputs: true, users: 3, expect: .batch), .succeeded(left: 2, release: false, acks: .batch),
                .acks(at: 10, publish: true),
                .batch(at: 20, outputs: true, users: 3, expect: .batch), .succeeded(left: 2, release: false, acks: .batch),
                .acks(at: 20, publish: false),  // coalesced: one round per ack interval
                .batch(at: 100, users: 2, expect: .all), .succeeded(release: true, acks: .all),
                .acks(at: 100, publish: false),
                .batch(at: 200, expect: .all), .succeeded(release: true, acks: .all),
                .acks(at: 260, publish: true)  // 250 ms after the last round
            ]
        ),
        (
            "a failed commit holding outputs makes the next batches commit everything, in order",
            [
                .batch(at: 5, outputs: true, expect: .batch), .failed,
                .batch(at: 10, expect: .all), .failed,  // still held
                .batch(at: 20, expect: .all), .succeeded(release: true, acks: .all), .acks(at: 20, publish: true),
                .batch(at: 30, expect: .none)  // nothing held any more
            ]
        ),
        (
            "series wait for the interval's commit, or go with the next batch commit of other outputs",
            [
                .batch(at: 5, deferred: true, expect: .none),
                .batch(at: 50, deferred: true, users: 2, expect: .none),
                .batch(at: 60, outputs: true, deferred: true, users: 3, expect: .batch), .succeeded(left: 1, release: false, acks: .batch),
                .acks(at: 60, publish: true),
                .batch(at: 70, deferred: true, users: 2, expect: .none),
                .batch(at: 100, deferred: true, users: 2, expect: .all), .succeeded(release: true, acks: .all), .acks(at: 100, publish: false)
            ]
        ),
        (
            "a failed commit of waiting series makes the next batches commit everything",
            [
                .batch(at: 100, deferred: true, expect: .all), .failed,
                .batch(at: 110, deferred: true, expect: .all), .succeeded(release: true, acks: .all), .acks(at: 110, publish: true),
                .batch(at: 120, expect: .none)
            ]
        ),
        (
            "a failed commit without outputs changes nothing",
            [
                .batch(at: 100, expect: .all), .failed,
                .batch(at: 110, expect: .none)
            ]
        ),
        (
            "a barrier commits everything and publishes acknowledgements whatever the interval",
            [
                .batch(at: 1, outputs: true, expect: .batch), .succeeded(release: true, acks: .batch), .acks(at: 1, publish: true),
                .batch(at: 2, barrier: true, expect: .all), .succeeded(release: true, acks: .all), .acks(at: 2, publish: true),
                .batch(at: 3, barrier: true, expect: .all), .succeeded(release: true, acks: .all), .acks(at: 3, waiting: false, publish: false)
            ]
        ),
        (
            "a commit stays bounded in users",
            [
                .batch(at: 1, users: ShardCommitPolicy.maxPendingUsers - 1, expect: .none),
                .batch(at: 2, users: ShardCommitPolicy.maxPendingUsers, expect: .all), .succeeded(release: true, acks: .all)
            ]
        ),
        (
            "closing commits everything and publishes acknowledgements, even after a failure; the journal is not released",
            [
                .batch(at: 1, expect: .none),
                .close, .succeeded(release: false, acks: .all), .acks(at: 2, publish: true)
            ]
        ),
        (
            "closing after a failed last commit still publishes what was durable before",
            [
                .close, .failed, .acks(at: 1, publish: true)
            ]
        )
    ]

    @Test(arguments: scenarios) func scenario(_ name: String, _ steps: [Step]) {
        Self.run(steps)
    }

    @Test func withoutJournalOrIntervalEveryBatchCommitsEverything() {
        Self.run([.batch(at: 1, expect: .all), .succeeded(release: true, acks: .all), .acks(at: 1, publish: true)], keeper: .none)
        Self.run(
            [
                .batch(at: 1, expect: .all), .succeeded(release: true, acks: .all), .acks(at: 1, publish: true),
                .batch(at: 2, expect: .all), .succeeded(release: true, acks: .all), .acks(at: 2, publish: false)
            ], interval: 0)
    }

    /// A shard fed by JetStream partitions: hand-offs wait for the interval's commit, which
    /// takes everyone (their stream positions go only with every user); outputs and barriers
    /// commit at once, everyone too.
    @Test func streamHandOffsWaitForTheIntervalAndCommitTogether() {
        Self.run(
            [
                .batch(at: 5, expect: .none), .batch(at: 40, users: 2, expect: .none),
                .batch(at: 100, users: 3, expect: .all), .succeeded(release: true, acks: .all), .acks(at: 100, publish: true),
                .batch(at: 120, outputs: true, expect: .all), .succeeded(release: true, acks: .all),
                .acks(at: 120, publish: false),  // the ack interval still runs
                .batch(at: 130, barrier: true, expect: .all), .succeeded(release: true, acks: .all),
                .acks(at: 130, publish: true),  // a barrier publishes what is durable at once
                .batch(at: 140, expect: .none),
                .batch(at: 230, expect: .all), .succeeded(release: true, acks: .all)  // the interval runs from the commit of everyone
            ], keeper: .stream)
    }

    /// A hand-off with more input waiting behind it, which its partition fetches only after
    /// this commit: it commits at once (everyone), and the interval runs again from there; one
    /// with nothing behind it waits for the interval.
    @Test func aHandOffWithMoreInputBehindItCommitsAtOnce() {
        Self.run(
            [
                .batch(at: 5, expect: .none),
                .batch(at: 10, backlog: true, expect: .all), .succeeded(release: true, acks: .all), .acks(at: 10, publish: true),
                .batch(at: 20, expect: .none),
                .batch(at: 30, backlog: true, expect: .all), .succeeded(release: true, acks: .all), .acks(at: 30, publish: false),
                .batch(at: 129, expect: .none),
                .batch(at: 130, expect: .all), .succeeded(release: true, acks: .all)
            ], keeper: .stream)
    }

    /// A stream's partition waits for its batch's commit: a stream-fed shard's interval is at
    /// most ``ShardCommitPolicy/longestStreamWaitMs`` (1 s), whatever `--commit-interval` says, far
    /// below the stall bound and JetStream's `ack_wait`; the journal's and nothing's are as given.
    @Test func aStreamsIntervalIsAtMostTheLongestStreamWait() {
        let minute: UInt64 = 60_000_000_000
        func interval(_ keeper: ShardCommitPolicy.Keeper, _ ns: UInt64) -> UInt64 {
            ShardCommitPolicy(intervalNs: ns, ackIntervalNs: 0, keeper: keeper, now: 0).intervalNs
        }
        #expect(interval(.stream, minute) == UInt64(ShardCommitPolicy.longestStreamWaitMs) * 1_000_000)
        #expect(interval(.stream, 100_000_000) == 100_000_000)
        #expect(interval(.journal, minute) == minute)
        #expect(interval(.none, minute) == minute)
    }

    /// When a shard fed by streams wakes for the interval's commit: when it is due (at least
    /// 1 ms on), never while a commit is in progress, and never for a journal or no keeper.
    @Test func theIntervalsCommitIsDueOnlyForStreams() {
        let ms = Self.ms
        var p = ShardCommitPolicy(intervalNs: 100 * ms, ackIntervalNs: 0, keeper: .stream, now: 0)
        p.started(now: 1000 * ms)
        #expect(p.commitDueInNs(now: 1030 * ms) == 70 * ms)
        #expect(p.commitDueInNs(now: 1100 * ms) == 1 * ms && p.commitDueInNs(now: 1500 * ms) == 1 * ms)
        #expect(p.batchProcessed(outputs: false, barrier: false, pendingUsers: 1, now: 1100 * ms) == .all)
        #expect(p.commitDueInNs(now: 1150 * ms) == nil)  // committing
        _ = p.commitSucceeded(pendingUsersLeft: 0)
        _ = p.acknowledgementsDurable(waiting: false, now: 1150 * ms)
        #expect(p.commitDueInNs(now: 1150 * ms) == 50 * ms)
        // A failed commit: the shard does not wake for the interval; the next item an interval
        // after the failure (housekeeping's) retries it, one sooner does not.
        #expect(p.batchProcessed(outputs: false, barrier: false, pendingUsers: 1, now: 1250 * ms) == .all)
        p.commitFailed()
        #expect(p.commitDueInNs(now: 1500 * ms) == nil)
        #expect(p.batchProcessed(outputs: false, barrier: false, pendingUsers: 1, now: 1300 * ms) == .none)
        #expect(p.batchProcessed(outputs: false, barrier: false, pendingUsers: 1, now: 1500 * ms) == .all)
        _ = p.commitSucceeded(pendingUsersLeft: 0)
        _ = p.acknowledgementsDurable(waiting: false, now: 1500 * ms)
        #expect(p.commitDueInNs(now: 1520 * ms) == 80 * ms)
        for keeper in [ShardCommitPolicy.Keeper.journal, .none] {
            var q = ShardCommitPolicy(intervalNs: 100 * ms, ackIntervalNs: 0, keeper: keeper, now: 0)
            q.started(now: 0)
            #expect(q.commitDueInNs(now: 5 * ms) == nil && q.commitDueInNs(now: 500 * ms) == nil)
        }
    }
}
