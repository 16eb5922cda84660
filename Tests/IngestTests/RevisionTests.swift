import EngineTestSupport
import MobilityModel
import RuleLanguage
import Testing

@testable import Ingest
@testable import RuleEngine

/// Revision: a timeline entry, late sample or deletion dated on a closed day rolls the user's alert
/// states back to that day and evaluates the days since again, so that the alerts end as if it had
/// been there on time, and what was published is corrected.
@Suite struct RevisionTests {
    /// A drop against the user's own recent past: the 10-day window cannot cross an injury, so a
    /// known injury explains the drop (unknown, no alert) and an unknown one fires it.
    static let rules = """
        series s = mean(walkingSpeed)
        alert drop {
          when mean(s, 3 d, min: 3) < mean(s, 10 d, min: 7) - 0.3 m/s
          for 2 d
        }
        alert low {
          when s < 0.8 m/s
          for 2 d
        }
        """

    static let injury = "{\"id\":\"inj\",\"kind\":\"injury\",\"date\":\"\(CivilDate(dayNumber: day0 + 10))\"}"

    /// Days 0–29 of one sample a day (1.2 m/s, 0.5 m/s from day 10 on), wall clock; the injury
    /// dated day 10 arrives on `injuryArrives` (nil: never), each day closed as it ends.
    static func run(injuryArrives: Int?, _ configure: (inout EngineConfiguration) -> Void = { _ in }) -> (Ingestor, [EngineOutput]) {
        var c = EngineConfiguration()
        configure(&c)
        var ing = Ingestor(engine: Engine(program: program(rules), configuration: c), clock: .wall)
        var out: [EngineOutput] = []
        for d in 0..<30 {
            if d == injuryArrives {
                ing.handle(topic: WireTraffic.eventsTopic("u"), payload: WireTraffic.events([injury]), now: close(d), into: &out)
            }
            ing.handle(
                topic: WireTraffic.samplesTopic("u"), payload: WireTraffic.samples("s\(d)", day: d, hours: [12], speed: d < 10 ? 1.2 : 0.5), now: close(d),
                into: &out)
            ing.tick(now: close(d), into: &out)
        }
        return (ing, out)
    }

    static func drops(_ out: [EngineOutput]) -> [AlertTransition] { out.alerts.filter { $0.rule == "drop" } }

    @Test func anInjuryEnteredLateWithdrawsTheAlertItExplainsAndEndsAsIfOnTime() {
        let (onTime, onTimeOut) = Self.run(injuryArrives: 10)
        let (_, unknownOut) = Self.run(injuryArrives: nil)
        #expect(Self.drops(onTimeOut).isEmpty)
        // Without the injury, the drop fires (the alert a late entry must correct).
        #expect(Self.drops(unknownOut).contains { $0.status == .firing })
        for late in [3, 7, 14] {
            let (ing, out) = Self.run(injuryArrives: 10 + late)
            #expect(out.rejections.isEmpty)
            let drops = Self.drops(out)
            // What fired before the injury was known is withdrawn, with the reason.
            for t in drops where t.status == .firing {
                #expect(drops.contains { $0.id == t.id && $0.status == .resolved && $0.reason == "revised" }, "late \(late): \(t.id) not withdrawn")
            }
            if late >= 7 { #expect(drops.contains { $0.reason == "revised" }, "late \(late): nothing withdrawn") }
            // The alert states end as on time, whatever was published meanwhile.
            #expect(ing.engine.state(of: "u")!.alertStates == onTime.engine.state(of: "u")!.alertStates, "late \(late)")
            #expect(ing.engine.firingCounts == onTime.engine.firingCounts && ing.engine.firingCounts == ing.engine.countFiring())
            // And every other alert is the on-time run's.
            #expect(out.alerts.filter { $0.rule == "low" } == onTimeOut.alerts.filter { $0.rule == "low" })
        }
    }

    @Test func anInjuryOlderThanTheRevisionWindowLeavesPublishedAlertsStanding() {
        let (_, unknownOut) = Self.run(injuryArrives: nil)
        let (ing, out) = Self.run(injuryArrives: 10 + 16)
        #expect(out.rejections.isEmpty && ing.engine.state(of: "u")!.events["inj"] != nil)
        #expect(!out.alerts.contains { $0.reason == "revised" })
        #expect(Self.drops(out) == Self.drops(unknownOut))
    }

    @Test func withoutRevisionsNothingIsReEvaluated() {
        let (_, unknownOut) = Self.run(injuryArrives: nil)
        let (_, out) = Self.run(injuryArrives: 17) { $0.revisionDays = 0 }
        #expect(Self.drops(out) == Self.drops(unknownOut))
    }

    /// Samples of a closed day that arrive after it closed (a watch that syncs through the phone
    /// later) give the alerts the day would have given had they come in time.
    @Test func lateSamplesReEvaluateTheDaysTheyChange() {
        func run(late: Bool) -> (Ingestor, [EngineOutput]) {
            var ing = Ingestor(engine: Engine(program: program(Self.rules)), clock: .wall)
            var out: [EngineOutput] = []
            for d in 0..<12 {
                // Mornings slow (0.5 m/s), evenings fast (2.0 m/s): the day's mean is 1.25 m/s.
                ing.handle(
                    topic: WireTraffic.samplesTopic("u"), payload: WireTraffic.samples("m\(d)", day: d, hours: [8], speed: 0.5), now: close(d), into: &out)
                if !late || d < 5 || d > 7 {
                    ing.handle(
                        topic: WireTraffic.samplesTopic("u"), payload: WireTraffic.samples("e\(d)", day: d, hours: [20], speed: 2.0), now: close(d), into: &out)
                }
                ing.tick(now: close(d), into: &out)
                if late && d == 7 {
                    for k in 5...7 {
                        ing.handle(
                            topic: WireTraffic.samplesTopic("u"), payload: WireTraffic.samples("e\(k)", day: k, hours: [20], speed: 2.0), now: close(d),
                            into: &out)
                    }
                    ing.tick(now: close(d), into: &out)
                }
            }
            return (ing, out)
        }
        let (onTime, onTimeOut) = run(late: false)
        let (late, lateOut) = run(late: true)
        #expect(onTimeOut.alerts.isEmpty)
        let low = lateOut.alerts.filter { $0.rule == "low" }
        #expect(low.map(\.status) == [.firing, .resolved], "\(low.map { ($0.status, $0.day, $0.reason) })")
        #expect(low.last?.reason == "revised")
        #expect(late.engine.state(of: "u")!.alertStates == onTime.engine.state(of: "u")!.alertStates)
    }

    @Test func aReSentEntryChangesNothing() {
        var (ing, out) = Self.run(injuryArrives: 10)
        out.removeAll()
        for _ in 0..<3 { ing.handle(topic: WireTraffic.eventsTopic("u"), payload: WireTraffic.events([Self.injury]), now: close(29), into: &out) }
        ing.tick(now: close(29), into: &out)
        #expect(out.isEmpty, "\(out.count) outputs")
    }

    /// A corrected date (the same id, another day) re-evaluates from the earlier of the two.
    @Test func aCorrectedInjuryDateReEvaluatesFromTheEarlierDay() {
        let (onTime, _) = Self.run(injuryArrives: 10)
        var (ing, out) = Self.run(injuryArrives: nil)
        let wrong = "{\"id\":\"inj\",\"kind\":\"injury\",\"date\":\"\(CivilDate(dayNumber: day0 + 25))\"}"
        ing.handle(topic: WireTraffic.eventsTopic("u"), payload: WireTraffic.events([wrong]), now: close(29), into: &out)
        ing.tick(now: close(29), into: &out)
        out.removeAll()
        ing.handle(topic: WireTraffic.eventsTopic("u"), payload: WireTraffic.events([Self.injury]), now: close(29), into: &out)
        ing.tick(now: close(29), into: &out)
        #expect(ing.engine.state(of: "u")!.boundaries == [day0 + 10])
        #expect(ing.engine.state(of: "u")!.alertStates == onTime.engine.state(of: "u")!.alertStates)
    }

    /// The alert log is part of the stored state: a restart between the days and the late entry
    /// publishes what an uninterrupted run publishes.
    @Test func aRestartKeepsWhatARevisionStartsFrom() {
        var (ing, _) = Self.run(injuryArrives: nil)
        var restarted = Ingestor(engine: Engine(program: program(Self.rules)), clock: .wall)
        restarted.restore(user: "u", state: ing.engine.snapshot(of: "u"), eventNow: nil)
        #expect(!ing.engine.state(of: "u")!.alertLog.isEmpty)
        #expect(restarted.engine.state(of: "u")!.alertLog == ing.engine.state(of: "u")!.alertLog)
        var a: [EngineOutput] = [], b: [EngineOutput] = []
        let late = "{\"id\":\"inj\",\"kind\":\"injury\",\"date\":\"\(CivilDate(dayNumber: day0 + 20))\"}"
        ing.handle(topic: WireTraffic.eventsTopic("u"), payload: WireTraffic.events([late]), now: close(29), into: &a)
        ing.tick(now: close(29), into: &a)
        restarted.handle(topic: WireTraffic.eventsTopic("u"), payload: WireTraffic.events([late]), now: close(29), into: &b)
        restarted.tick(now: close(29), into: &b)
        #expect(a == b && !a.isEmpty)
        #expect(ing.engine.state(of: "u")!.alertStates == restarted.engine.state(of: "u")!.alertStates)
    }

    /// The log keeps only the days a revision can reach, and only the days that changed a state.
    @Test func theAlertLogIsBounded() {
        let (ing, _) = Self.run(injuryArrives: nil)
        let st = ing.engine.state(of: "u")!
        let window = st.lastClosedDay! - DayNumber(ing.engine.configuration.revisionDays) + 1
        #expect(st.alertLog.allSatisfy { $0.day >= window })
        #expect(st.alertLog.count < 2 * ing.engine.configuration.revisionDays)
    }
}

/// What a revision must not do: re-evaluate days whose starting states the alert log does not hold.
@Suite struct RevisionBoundsTests {
    /// Days 0–19 as ``RevisionTests/run``, no injury: `drop` fires day 12 and resolves, `low` fires
    /// day 11 and stays firing.
    static func run(days: Int = 20) -> Ingestor {
        var ing = Ingestor(engine: Engine(program: program(RevisionTests.rules)), clock: .wall)
        var out: [EngineOutput] = []
        for d in 0..<days {
            ing.handle(
                topic: WireTraffic.samplesTopic("u"), payload: WireTraffic.samples("s\(d)", day: d, hours: [12], speed: d < 10 ? 1.2 : 0.5),
                now: close(d), into: &out)
            ing.tick(now: close(d), into: &out)
        }
        return ing
    }

    /// Another 0.5 m/s sample of day 13: no day's mean changes.
    static func noOpLateSample(_ ing: inout Ingestor) -> [EngineOutput] {
        var out: [EngineOutput] = []
        ing.handle(topic: WireTraffic.samplesTopic("u"), payload: WireTraffic.samples("late", day: 13, hours: [13], speed: 0.5), now: close(19), into: &out)
        ing.tick(now: close(19), into: &out)
        return out
    }

    /// A state stored before the alert log existed (or with revisions off) cannot re-evaluate the
    /// days closed before its restore: a late sample that changes nothing publishes nothing, as
    /// it does with the log.
    @Test func aStateRestoredWithoutTheLogDoesNotReEvaluateEarlierDays() {
        let ing = Self.run()
        for strip in [false, true] {
            var snap = ing.engine.snapshot(of: "u")!
            if strip {
                snap.alertLog = []
                snap.alertLogStart = nil
            }
            var r = Ingestor(engine: Engine(program: program(RevisionTests.rules)), clock: .wall)
            r.restore(user: "u", state: snap, eventNow: nil)
            let out = Self.noOpLateSample(&r)
            #expect(out.rejections.isEmpty)
            #expect(out.alerts.isEmpty, "strip \(strip): \(out.alerts.map { ($0.rule, $0.status, $0.reason ?? "") })")
        }
    }

    /// After a reload that tunes a rule, a late sample does not re-evaluate the days evaluated under
    /// the old rules (it would rewrite what they rightly published).
    @Test func aReloadDoesNotRewriteThePastOnTheNextLateSample() {
        var ing = Self.run()
        var out: [EngineOutput] = []
        ing.engine.reload(program(RevisionTests.rules.replacingOccurrences(of: "s < 0.8 m/s", with: "s < 0.4 m/s")), now: close(19), into: &out)
        out = Self.noOpLateSample(&ing)
        #expect(out.rejections.isEmpty)
        #expect(out.alerts.isEmpty, "\(out.alerts.map { ($0.rule, $0.status, $0.reason ?? "") })")
        #expect(ing.engine.state(of: "u")!.alertLogStart == day0 + 20)
    }

    /// A daily rule inhibited by a per-sample rule is not re-evaluated (the log holds no past state
    /// of the per-sample rule): an alert that rightly fired stays, whatever fires now.
    @Test func aPerSampleInhibitorFiringNowDoesNotInhibitThePast() {
        let rules = """
            series s = mean(walkingSpeed)
            alert very_slow {
              on sample walkingSpeed
              when value < 0.1 m/s
            }
            alert low {
              when s < 0.8 m/s
              for 2 d
              inhibited_by very_slow
            }
            """
        var ing = Ingestor(engine: Engine(program: program(rules)), clock: .wall)
        var out: [EngineOutput] = []
        for d in 0..<20 {
            ing.handle(
                topic: WireTraffic.samplesTopic("u"), payload: WireTraffic.samples("s\(d)", day: d, hours: [12], speed: d < 14 ? 1.2 : 0.5),
                now: close(d), into: &out)
            if d == 19 {
                ing.handle(topic: WireTraffic.samplesTopic("u"), payload: WireTraffic.samples("x", day: d, hours: [18], speed: 0.05), now: close(d), into: &out)
            }
            ing.tick(now: close(d), into: &out)
        }
        #expect(out.alerts.contains { $0.rule == "low" && $0.status == .firing })
        out.removeAll()
        ing.handle(topic: WireTraffic.samplesTopic("u"), payload: WireTraffic.samples("late", day: 13, hours: [13], speed: 1.2), now: close(19), into: &out)
        ing.tick(now: close(19), into: &out)
        #expect(out.rejections.isEmpty)
        #expect(!out.alerts.contains { $0.rule == "low" }, "\(out.alerts.map { ($0.rule, $0.status, $0.reason ?? "") })")
    }

    /// A clinical event retracted after the revision window passed it leaves the alerts as
    /// published; an unrelated old event does not stop late samples from re-evaluating their days.
    @Test func aClinicalChangeBeforeTheWindowLeavesAlertsAndAnOldEventBlocksNothing() {
        let injury = "{\"id\":\"inj\",\"kind\":\"injury\",\"date\":\"\(CivilDate(dayNumber: day0 + 10))\"}"
        var ing = Ingestor(engine: Engine(program: program(RevisionTests.rules)), clock: .wall)
        var out: [EngineOutput] = []
        for d in 0..<30 {
            if d == 10 { ing.handle(topic: WireTraffic.eventsTopic("u"), payload: WireTraffic.events([injury]), now: close(d - 1), into: &out) }
            ing.handle(
                topic: WireTraffic.samplesTopic("u"), payload: WireTraffic.samples("s\(d)", day: d, hours: [12], speed: d < 10 ? 1.2 : 0.5),
                now: close(d), into: &out)
            ing.tick(now: close(d), into: &out)
        }
        // Late samples of days 25–27 that make them fast: `low` no longer held there, re-evaluated
        // although the injury (day 10) lies before the window.
        out.removeAll()
        ing.handle(
            topic: WireTraffic.samplesTopic("u"), payload: WireTraffic.samples("fast", day: 26, hours: [8, 9, 10, 11, 13, 14, 15, 16], speed: 2.5),
            now: close(29), into: &out)
        ing.tick(now: close(29), into: &out)
        #expect(out.alerts.contains { $0.rule == "low" }, "a late sample after an old injury was not re-evaluated")
        // Retracting the injury (before the window): the series are republished, the alerts stand.
        out.removeAll()
        ing.handle(topic: WireTraffic.eventsTopic("u"), payload: Array("[{\"id\":\"inj\",\"retracted\":true}]".utf8), now: close(29), into: &out)
        ing.tick(now: close(29), into: &out)
        #expect(!out.series.isEmpty && out.series.allSatisfy(\.revised))
        #expect(out.alerts.isEmpty, "\(out.alerts.map { ($0.rule, $0.status, $0.reason ?? "") })")
    }
}

extension RevisionTests {
    /// A rule has one retained alert topic: when a revision withdraws an earlier episode while a
    /// later one of the same rule fires on, the later one is published again, last, so that what
    /// the topic holds is the alert that fires.
    @Test func anEpisodeFiringOnIsPublishedAgainAfterAnEarlierOnesWithdrawal() {
        var ing = Ingestor(engine: Engine(program: program(Self.rules)), clock: .wall)
        var out: [EngineOutput] = []
        // low: slow days 10–11 (fires day 11), fast day 12 (resolves), slow 13–15 (fires day 14).
        let slow: Set<Int> = [10, 11, 13, 14, 15]
        for d in 0...15 {
            ing.handle(
                topic: WireTraffic.samplesTopic("u"), payload: WireTraffic.samples("s\(d)", day: d, hours: [12], speed: slow.contains(d) ? 0.5 : 1.2),
                now: close(d), into: &out)
            ing.tick(now: close(d), into: &out)
        }
        let low = out.alerts.filter { $0.rule == "low" }
        #expect(low.map(\.status) == [.firing, .resolved, .firing])
        out.removeAll()
        // Evening samples of days 10 and 11 arrive late: those days were not slow after all.
        for d in [10, 11] {
            ing.handle(topic: WireTraffic.samplesTopic("u"), payload: WireTraffic.samples("e\(d)", day: d, hours: [20], speed: 2.0), now: close(15), into: &out)
        }
        ing.tick(now: close(15), into: &out)
        let revised = out.alerts.filter { $0.rule == "low" }
        #expect(revised.map(\.status) == [.resolved, .firing], "\(revised.map { ($0.status, $0.day, $0.reason ?? "") })")
        #expect(revised.first?.isWithdrawal == true && revised.first?.id == low[0].id)
        #expect(revised.last?.id == low[2].id && revised.last?.isRepeat == false)
    }
}
