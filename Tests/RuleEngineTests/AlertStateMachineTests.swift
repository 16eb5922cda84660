import EngineTestSupport
import MobilityModel
import Testing

@testable import RuleEngine

@Suite struct AlertStateMachineTests {
    typealias A = AlertStateMachine.Action
    let day: Int64 = 86_400_000

    /// Feeds conditions one day apart and collects the actions; a nil in `monitored` (outside the
    /// monitoring window) is written `-` in the tables.
    func run(
        _ conds: [Bool?], monitored: [Bool]? = nil, forDays: Int64 = 0, keep: Int64 = 0, repeatDays: Int64 = 0, cooldown: Int64 = 0
    ) -> [String] {
        var sm = AlertStateMachine()
        return conds.enumerated().map { i, c in
            let at = Int64(i + 1) * day
            switch sm.evaluate(
                c, monitored: monitored?[i] ?? true, at: at, activeSince: Int64(i) * day, forMs: forDays * day, keepFiringForMs: keep * day,
                repeatMs: repeatDays * day, cooldownMs: cooldown * day)
            {
            case .none: return "."
            case .fire: return "F"
            case .repeatFiring: return "R"
            case .resolve: return "X"
            case .expire: return "E"
            }
        }
    }

    /// Conditions T true, F false, ? unknown; `-` outside the monitoring window (its condition,
    /// were it read, true: the window alone decides).
    func c(_ s: String) -> [Bool?] { s.map { $0 == "T" || $0 == "-" ? true : $0 == "F" ? false : nil } }
    func w(_ s: String) -> [Bool] { s.map { $0 != "-" } }

    @Test func table() {
        #expect(run(c("FTTFF")).joined() == ".F.X.")
        #expect(run(c("TTTTF"), forDays: 3).joined() == "..F.X")  // fires when held for 3 days
        #expect(run(c("TTF"), forDays: 1).joined() == "F.X")  // `for 1 d`: the first true day is a whole day
        #expect(run(c("TTTF"), forDays: 2).joined() == ".F.X")  // `for 2 d`: the second
        #expect(run(c("TT?TTTF"), forDays: 3).joined() == ".....FX")  // unknown resets pending
        #expect(run(c("TTFTT"), forDays: 3).joined() == ".....")  // false resets pending
        #expect(run(c("T??F"), forDays: 0).joined() == "F..X")  // unknown holds firing
        #expect(run(c("TFFF"), keep: 2).joined() == "F.X.")  // keep_firing_for 2 days
        #expect(run(c("TFTF"), keep: 2).joined() == "F...")  // true again within keep: still firing
        #expect(run(c("TTTTTTTT"), repeatDays: 3).joined() == "F..R..R.")  // reminders every 3 days
        #expect(run(c("TFTTTT"), cooldown: 3).joined() == "FX..F.")  // no new firing within the cooldown
    }

    /// The monitoring window (`during`): nothing starts outside it, a pending alert resets, and a
    /// firing one ends as expired, never resolved, whatever its condition.
    @Test(
        arguments: [
            // conditions, expected actions, for/keep_firing_for/repeat/cooldown (days)
            ("--TTT---", "..F..E..", 0, 0, 0, 0),  // fires inside, expires on the first day outside
            ("TTT--TTT", "F..E.F..", 0, 0, 0, 0),  // a window that opens again fires a new instance
            ("TF--", "F.E.", 0, 3, 0, 0),  // within keep_firing_for at the window's end: expired, not resolved
            ("T?-", "F.E", 0, 0, 0, 0),  // held by unknown data, then the window ends: expired
            ("TT-TTT", ".....F", 3, 0, 0, 0),  // `for` restarts after the window: pending resets outside
            ("T-TTTT", "....F.", 3, 0, 0, 0),
            ("TTTT-", "F..RE", 0, 0, 3, 0),  // a reminder, then the expiry
            ("T-TTTT", "FE..F.", 0, 0, 0, 3),  // the cooldown runs from the expiry too
            ("---", "...", 0, 0, 0, 0)
        ] as [(String, String, Int64, Int64, Int64, Int64)])
    func monitoringWindow(_ conds: String, _ expected: String, _ forDays: Int64, _ keep: Int64, _ repeatDays: Int64, _ cooldown: Int64) {
        #expect(
            run(c(conds), monitored: w(conds), forDays: forDays, keep: keep, repeatDays: repeatDays, cooldown: cooldown).joined() == expected,
            "\(conds)")
    }

    @Test func anExpiryCarriesTheInstanceAndItsEnd() {
        var sm = AlertStateMachine()
        #expect(sm.evaluate(true, at: day, activeSince: 0, forMs: 0, keepFiringForMs: 0, repeatMs: 0, cooldownMs: 0) == .fire(activeSince: 0, firedAt: day))
        #expect(
            sm.evaluate(nil, monitored: false, at: 2 * day, activeSince: day, forMs: 0, keepFiringForMs: 0, repeatMs: 0, cooldownMs: 0)
                == .expire(activeSince: 0, firedAt: day, expiredAt: 2 * day))
        #expect(!sm.isFiring && sm.state == .inactive)
    }

    @Test func localDayClockCountsA23HourDayAsADay() throws {
        // Local midnights in Los Angeles around the spring-forward day (2026-03-08, 23 h).
        let la = try #require(LocalCalendar(identifier: "America/Los_Angeles"))
        let d0 = CivilDate(year: 2026, month: 3, day: 6).dayNumber
        func midnight(_ k: Int32) -> Int64 { la.startOfDay(d0 + k).milliseconds }
        func fires(_ clock: AlertStateMachine.Clock) -> Int? {
            var sm = AlertStateMachine()
            for k: Int32 in 0..<4 {
                // Day d0+k evaluated at its end; active since the start of day d0.
                if case .fire = sm.evaluate(
                    true, at: midnight(k + 1), activeSince: midnight(0), forMs: 3 * day, keepFiringForMs: 0,
                    repeatMs: 0, cooldownMs: 0, clock: clock)
                {
                    return Int(k)
                }
            }
            return nil
        }
        #expect(fires(.days(la)) == 2)  // the third local day (03-08)
        #expect(fires(.wall) == 3)  // 71 h is not 72 h: the wall clock slips a day (per-sample rules keep it)
        // Cooldown on the local-day clock ends at a local midnight.
        var sm = AlertStateMachine()
        _ = sm.evaluate(true, at: midnight(0), activeSince: midnight(0), forMs: 0, keepFiringForMs: 0, repeatMs: 0, cooldownMs: 0, clock: .days(la))
        _ = sm.evaluate(false, at: midnight(1), activeSince: midnight(1), forMs: 0, keepFiringForMs: 0, repeatMs: 0, cooldownMs: day, clock: .days(la))
        #expect(sm.quietUntil == midnight(2))
    }

    @Test func staleEvaluationsAreIgnored() {
        var sm = AlertStateMachine()
        #expect(sm.evaluate(true, at: 10, activeSince: 10, forMs: 0, keepFiringForMs: 0, repeatMs: 0, cooldownMs: 0) == .fire(activeSince: 10, firedAt: 10))
        #expect(sm.evaluate(false, at: 5, activeSince: 5, forMs: 0, keepFiringForMs: 0, repeatMs: 0, cooldownMs: 0) == .none)
        #expect(sm.isFiring)
    }
}
