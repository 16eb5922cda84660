import EngineTestSupport
import MobilityModel
import RuleLanguage
import TestSupport
import Testing

@testable import RuleEngine

/// The day close reads only as much of a condition as the alert's state machine uses
/// (``AlertStateMachine/conditionUse(at:)``, ``Evaluator/conditionHolds(_:_:)``).
@Suite struct ConditionTruthTests {
    /// Lets of each truth value: `t` true, `f` false, `u` unknown (no step length on the day).
    static let lets = """
          let t = mean(walkingSpeed) > 0.5 m/s
          let f = mean(walkingSpeed) < 0.5 m/s
          let u = mean(walkingStepLength) > 0.5 m
        """

    /// A random condition over `t`, `f`, `u` with `and`, `or`, `not`.
    static func expression(_ rng: inout SplitMix64, depth: Int) -> String {
        if depth == 0 || rng.next() % 4 == 0 { return ["t", "f", "u"][Int(rng.next() % 3)] }
        switch rng.next() % 3 {
        case 0: return "not (\(expression(&rng, depth: depth - 1)))"
        case 1: return "(\(expression(&rng, depth: depth - 1))) and (\(expression(&rng, depth: depth - 1)))"
        default: return "(\(expression(&rng, depth: depth - 1))) or (\(expression(&rng, depth: depth - 1)))"
        }
    }

    /// An evaluator over one user with a walking-speed sample on day 1 (and no step length).
    static func evaluator(_ rules: String) -> (Evaluator, DayNumber) {
        let p = program(rules)
        var engine = Engine(program: p)
        var out: [EngineOutput] = []
        _ = engine.ingest(sample("s", 1.0, day: 1), user: "u", now: close(1), into: &out)
        var ev = Evaluator(rules: DayCloser(program: p, configuration: EngineConfiguration()))
        ev.user = engine.state(of: "u")!
        let d = day0 + 1
        ev.resetMemo(day: d)
        return (ev, d)
    }

    @Test func holdsAgreesWithTheThreeValuedCondition() {
        var rng = SplitMix64(seed: 18)
        var alerts: [String] = []
        for k in 0..<200 { alerts.append("alert a\(k) {\n\(Self.lets)\n  when \(Self.expression(&rng, depth: 4))\n}") }
        var (ev, d) = Self.evaluator(alerts.joined(separator: "\n"))
        var seen: Set<String> = []
        for j in 0..<alerts.count {
            ev.alert = j
            let value = ev.condition(j, d)
            seen.insert(value.map { "\($0)" } ?? "unknown")
            let root = ev.rules.code.conditions[j]
            let holds = ev.conditionHolds(j, d), isTrue = ev.holds(root, d, true), isFalse = ev.holds(root, d, false)
            #expect(holds == (value == true), "\(alerts[j])")
            #expect(isTrue == (value == true), "\(alerts[j])")
            #expect(isFalse == (value == false), "\(alerts[j])")
        }
        #expect(seen == ["true", "false", "unknown"])  // the random conditions reach all three values
    }

    @Test func conditionUseIsWhatTheStateMachineReads() {
        // From every state a short history reaches, the action and state are the same for every
        // condition `conditionUse` says are alike (none: all three; truth: false and unknown).
        let day: Int64 = 86_400_000
        let conditions: [Bool?] = [true, false, nil]
        var uses: Set<AlertStateMachine.ConditionUse> = []
        func histories(_ n: Int) -> [[Bool?]] { n == 0 ? [[]] : histories(n - 1).flatMap { h in conditions.map { h + [$0] } } }
        for history in histories(5) {
            for (forDays, keep, cooldown) in [(0, 0, 0), (2, 1, 0), (0, 2, 3), (3, 0, 2)] {
                var sm = AlertStateMachine()
                func feed(_ m: inout AlertStateMachine, _ c: Bool?, _ i: Int) -> AlertStateMachine.Action {
                    m.evaluate(
                        c, at: Int64(i + 1) * day, activeSince: Int64(i) * day, forMs: Int64(forDays) * day,
                        keepFiringForMs: Int64(keep) * day, repeatMs: 2 * day, cooldownMs: Int64(cooldown) * day, clock: .days(.utc))
                }
                for (i, c) in history.enumerated() { _ = feed(&sm, c, i) }
                let i = history.count
                // A stale evaluation reads nothing.
                #expect(sm.conditionUse(at: Int64(i) * day) == (i == 0 ? .truth : .none))
                let use = sm.conditionUse(at: Int64(i + 1) * day)
                uses.insert(use)
                let outcomes = conditions.map { c -> (AlertStateMachine.Action, AlertStateMachine) in
                    var m = sm
                    let a = feed(&m, c, i)
                    return (a, m)
                }
                switch use {
                case .none:
                    #expect(outcomes[0] == outcomes[1] && outcomes[1] == outcomes[2])
                case .truth:
                    #expect(outcomes[1] == outcomes[2])
                case .value:
                    #expect(sm.isFiring)
                }
            }
        }
        #expect(uses == [.none, .truth, .value])
    }
}
