import JetStreamAccess
import Testing

@testable import MobilityDaemon

/// The JetStream intake's decisions about a partition's consumer, as values in, verdicts out: no
/// threads, no NATS, no clock.
@Suite struct PartitionStreamInputTests {
    static let s: UInt64 = 1_000_000_000

    static func position(lastDelivery: UInt64, undelivered: UInt64 = 0, pending: Int64 = 0) -> JetStreamPullConsumer.Position {
        var p = JetStreamPullConsumer.Position(acknowledgedThrough: 0, deliveredThrough: 0, lastDelivery: lastDelivery, pendingAcknowledgement: pending)
        p.undelivered = undelivered
        return p
    }

    /// A fetch that brought messages with nothing more waiting holds the next one until the
    /// commit interval after its start; one with more behind it (a full batch, or the server's
    /// count) or an empty fetch does not, nor an interval of 0.
    @Test func aBatchWithNothingBehindItHoldsTheNextFetchForTheCommitInterval() {
        var linger = BatchLinger(intervalNs: 100_000_000)
        #expect(linger.nextFetchNs == 0)
        linger.fetched(3, backlog: false, startedAt: 7_000)
        #expect(linger.nextFetchNs == 100_007_000)
        linger.fetched(511, backlog: false, startedAt: 9_000)
        #expect(linger.nextFetchNs == 100_009_000)
        linger.fetched(488, backlog: true, startedAt: 10_000)
        #expect(linger.nextFetchNs == 0)
        linger.fetched(3, backlog: false, startedAt: 11_000)
        linger.fetched(0, backlog: false, startedAt: 12_000)
        #expect(linger.nextFetchNs == 0)
        var none = BatchLinger(intervalNs: 0)
        none.fetched(3, backlog: false, startedAt: 7_000)
        #expect(none.nextFetchNs == 7_000)
    }

    /// More input waits behind a fetch that came back full, not behind a shorter one.
    @Test func moreInputWaitsOnlyBehindAFullFetch() {
        #expect(BatchLinger.backlog(count: 512, of: 512))
        #expect(!BatchLinger.backlog(count: 511, of: 512))
        #expect(!BatchLinger.backlog(count: 0, of: 512))
    }

    /// The server is asked only after 5 s of empty fetches, then every 5 s; a batch that arrives
    /// starts the count again.
    @Test func anIdleConsumerIsAskedAfterFiveSecondsOfEmptyFetches() {
        var idle = IdleConsumer()
        let first = [10, 14, 15, 19, 20].map { idle.emptyFetch(now: UInt64($0) * Self.s) }
        #expect(first == [false, false, true, false, true])
        idle.reset()
        let after = [21, 25, 26].map { idle.emptyFetch(now: UInt64($0) * Self.s) }
        #expect(after == [false, false, true])
    }

    /// Stalled when the server counts other deliveries than arrived (more: lost in flight; fewer:
    /// a new leader numbering again); messages held undelivered, every delivery having arrived,
    /// are withheld at a first look and stalled at the second; live only with everything
    /// delivered and acknowledged.
    @Test(
        arguments: [
            (7, 0, 0, IdleConsumer.Finding.live),
            (9, 0, 0, .stalled),
            (5, 0, 0, .stalled),
            (7, 3, 0, .withheld),
            (0, 12, 0, .stalled),
            (7, 0, 2, .quiet)
        ] as [(UInt64, UInt64, Int64, IdleConsumer.Finding)])
    func whatAnIdleConsumersAccountSays(lastDelivery: UInt64, undelivered: UInt64, pending: Int64, expected: IdleConsumer.Finding) {
        var idle = IdleConsumer()
        let p = Self.position(lastDelivery: lastDelivery, undelivered: undelivered, pending: pending)
        #expect(idle.look(p, delivered: 7) == expected)
    }

    /// Messages withheld at two looks in a row stall the consumer; a batch between them, or a
    /// look that finds none, starts again.
    @Test func messagesWithheldAtTwoLooksInARowStallTheConsumer() {
        let held = Self.position(lastDelivery: 7, undelivered: 3)
        var idle = IdleConsumer()
        #expect(idle.look(held, delivered: 7) == .withheld)
        #expect(idle.look(held, delivered: 7) == .stalled)
        idle = IdleConsumer()
        #expect(idle.look(held, delivered: 7) == .withheld)
        idle.reset()
        #expect(idle.look(held, delivered: 7) == .withheld)
        #expect(idle.look(Self.position(lastDelivery: 7), delivered: 7) == .live)
        #expect(idle.look(held, delivered: 7) == .withheld)
    }

    /// Earlier consumers are deleted first when asked, then once a minute; a failed deletion is
    /// due again at once.
    @Test func earlierConsumersAreDeletedOnceThenEveryMinute() {
        var r = ConsumerRetirement()
        #expect(r.isDue(now: 1 * Self.s))
        r.attempted(succeeded: true, now: 1 * Self.s)
        #expect(!r.isDue(now: 2 * Self.s))
        #expect(!r.isDue(now: 60 * Self.s))
        #expect(r.isDue(now: 61 * Self.s))
        r.attempted(succeeded: false, now: 61 * Self.s)
        #expect(r.isDue(now: 62 * Self.s))
        // The server's account is asked at most once a second while a deletion waits for it.
        r.checked(now: 62 * Self.s)
        #expect(!r.isDue(now: 62 * Self.s + Self.s / 2))
        #expect(r.isDue(now: 63 * Self.s))
    }
}
