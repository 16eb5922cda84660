import EngineTestSupport
import MobilityModel
import Testing

@testable import RuleEngine

/// The event clock as a table: messages' latest ends (hours from 0) → the clock after each.
@Suite struct EventClockTests {
    static let h: Int64 = 3_600_000

    /// Feeds messages given as their sample ends in hours; returns the clock (hours) after each.
    static func run(_ messages: [[Int64]], policy: EventClockPolicy = EventClockPolicy()) -> [Int64?] {
        var c = EventClock()
        return messages.map { ends in
            let reach = c.reach(policy)
            var inStep = Int64.min, beyond = Int64.min
            for e in ends.map({ $0 * h }) { if e <= reach { inStep = max(inStep, e) } else { beyond = max(beyond, e) } }
            return c.observe(inStep: inStep, beyond: beyond, policy: policy).map { $0.milliseconds / h }
        }
    }

    @Test(
        arguments: [
            // in-step messages move the clock; the first message starts it
            ([[10], [14], [30]], [10, 14, 30]),
            // an outlier a year ahead is held; the next real message refutes it
            ([[10], [8760], [12], [20]], [10, 10, 12, 20]),
            // a burst of outliers in one message is one claim
            ([[10], [9000, 9001, 9002, 9003], [11]], [10, 10, 11]),
            // two outlier messages in a row are not enough (three confirm)
            ([[10], [8760], [8761], [12]], [10, 10, 10, 12]),
            // a real five-day gap: three consecutive messages confirm, the clock walks through them
            ([[10], [130], [133], [136], [139]], [10, 10, 10, 136, 139]),
            // a message entirely before the clock neither confirms nor refutes
            ([[100], [300], [50], [303], [306]], [100, 100, 100, 100, 306]),
            // in-step samples of a claiming message move the clock that far
            ([[10], [20, 500], [21]], [10, 20, 21]),
            // confirmation goes to the earliest claim and through later ones within a step; a wild one stays pending
            ([[10], [200], [210], [9999]], [10, 10, 10, 210])
        ] as [([[Int64]], [Int64])])
    func clockAfterEachMessage(messages: [[Int64]], expected: [Int64]) {
        #expect(Self.run(messages) == expected.map { Optional($0) })
    }

    @Test func aConfirmedJumpLeavesTheWildClaimPending() {
        var c = EventClock(now: Timestamp(milliseconds: 10 * Self.h))
        let p = EventClockPolicy()
        for e: Int64 in [200, 210, 9999] { c.observe(inStep: .min, beyond: e * Self.h, policy: p) }
        #expect(c.now == Timestamp(milliseconds: 210 * Self.h))
        #expect(c.claims == [9999 * Self.h])
    }

    @Test func oneConfirmationMeansTheOldUnguardedClock() {
        var p = EventClockPolicy()
        p.confirmations = 1
        #expect(Self.run([[10], [8760], [12]], policy: p) == [10, 8760, 8760])
    }
}

extension EventClockTests {
    /// The end of a bounded input confirms claims from the earliest on, while each is within the
    /// tolerance of the last (syncs of several days); an outlier far beyond stays pending.
    @Test func confirmingClaimsChainsFromTheEarliestAndLeavesAnOutlier() {
        let t: Int64 = 1_767_225_600_000, day: Int64 = 86_400_000
        var c = EventClock(now: Timestamp(milliseconds: t), claims: [t + 365 * day, t + 3 * day, t + 5 * day])
        c.confirmClaims(within: 7 * day)
        #expect(c.now?.milliseconds == t + 5 * day)
        #expect(c.claims == [t + 365 * day])
    }
}
