import Foundation
import Ingest
import MobilityModel
import MobilityWire
import RuleEngine
import Simulator
import TestSupport
import Testing

/// Alerts are a function of the samples, not of how a phone packed them: the same samples of each
/// user, in the same order, one a message, in random batches of up to 300 (multi-day syncs),
/// with messages re-sent, give the same alert transitions. An injury entered up to the revision
/// window late gives, once the alerts it explains are withdrawn, the alerts of the on-time injury.
/// Property tests over the shipped scenarios and population cohorts (with and without profiles,
/// syncs every 1–3 days); each case prints its seed.
@Suite struct PackagingInvarianceTests {
    /// The alert transitions of the traffic (event clock, the end of the input closing each
    /// user's days), as sorted JSON lines; `withdrawn`: also the episodes withdrawn on revision.
    static func alerts(_ records: [TrafficRecord], dropWithdrawn: Bool = false) -> (alerts: [String], withdrawn: Int, rejected: Int) {
        var ing = Ingestor(engine: Engine(program: ShardedReplayTests.program, configuration: ShardedReplayTests.configuration), clock: .event)
        var out: [EngineOutput] = []
        for r in records { ing.handle(topic: r.topic, payload: r.payload, now: Timestamp(milliseconds: 0), into: &out) }
        ing.closeOpenDays(into: &out)
        var transitions: [AlertTransition] = [], rejected = 0
        for o in out {
            switch o {
            case .alert(let t): transitions.append(t)
            case .rejected: rejected += 1
            case .series: break
            }
        }
        let revised = Set(transitions.filter { $0.reason == "revised" }.map(\.id))
        let kept = dropWithdrawn ? transitions.filter { !revised.contains($0.id) } : transitions
        return (kept.map(\.json).sorted(), transitions.count - kept.count, rejected)
    }

    /// The first few transitions only one side has, for a failure's message.
    static func difference(_ a: [String], _ b: [String]) -> [String] { Array(Set(a).symmetricDifference(b).sorted().prefix(4)) }

    static func cohort(seed: UInt64, syncDays: Int?, profiles: Bool) -> [TrafficRecord] {
        var pop = Population(users: 10, days: 70, seed: seed)
        pop.syncDays = syncDays
        pop.samplesPerMessage = syncDays == nil ? nil : 50
        let records = Array(pop.traffic())
        return profiles ? records : records.filter { !$0.topic.hasSuffix("/profile") }
    }

    static func scenarios() throws -> [TrafficRecord] {
        let dir = RepoPaths.root + "/simulator/scenarios"
        var out: [TrafficRecord] = []
        for f in try FileManager.default.contentsOfDirectory(atPath: dir).filter({ $0.hasSuffix(".scenario") }).sorted() {
            out += try Scenario.load(dir + "/" + f).generator.generate().map(\.record)
        }
        return out
    }

    @Test(arguments: [(1, nil, true), (2, 1, true), (3, 2, false), (4, 3, true), (5, nil, false)] as [(UInt64, Int?, Bool)])
    func randomPackingsAndReSendsOfACohortGiveTheSameAlerts(seed: UInt64, syncDays: Int?, profiles: Bool) {
        let base = Self.cohort(seed: seed, syncDays: syncDays, profiles: profiles)
        let expected = Self.alerts(base)
        #expect(expected.alerts.count > 5 && expected.rejected == 0, "seed \(seed): \(expected.alerts.count) alerts, \(expected.rejected) rejected")
        let packed = Self.alerts(TrafficVariations.repack(base, seed: seed))
        #expect(packed.alerts == expected.alerts, "seed \(seed): repacked differs: \(Self.difference(packed.alerts, expected.alerts))")
        #expect(packed.rejected == 0)
        let resent = Self.alerts(TrafficVariations.resend(TrafficVariations.repack(base, seed: seed + 100), seed: seed))
        #expect(resent.alerts == expected.alerts, "seed \(seed): re-sent differs: \(Self.difference(resent.alerts, expected.alerts))")
    }

    @Test func randomPackingsOfTheShippedScenariosGiveTheSameAlerts() throws {
        let base = try Self.scenarios()
        let expected = Self.alerts(base)
        #expect(expected.alerts.count > 10)
        for seed in [42, 43] as [UInt64] {
            let packed = Self.alerts(TrafficVariations.resend(TrafficVariations.repack(base, seed: seed), seed: seed))
            #expect(packed.alerts == expected.alerts, "seed \(seed): \(Self.difference(packed.alerts, expected.alerts))")
        }
    }

    @Test(arguments: [(11, 1), (12, 2), (13, 3)] as [(UInt64, Int)])
    func injuriesEnteredUpToTwoWeeksLateEndAsOnTime(seed: UInt64, syncDays: Int) {
        let base = Self.cohort(seed: seed, syncDays: syncDays, profiles: true)
        let expected = Self.alerts(base)
        var withdrawn = 0
        var rng = SplitMix64(seed: seed)
        let delays = (0..<16).map { _ in 1 + Int(rng.next() % 14) }
        let late = Self.alerts(TrafficVariations.delayInjuries(base) { user in delays[(Int(user.dropFirst()) ?? 0) % delays.count] }, dropWithdrawn: true)
        withdrawn += late.withdrawn
        #expect(late.rejected == 0, "seed \(seed)")
        // The late injuries mattered: alerts they explain fired before they came, and were withdrawn.
        #expect(withdrawn > 0, "seed \(seed)")
        #expect(late.alerts == expected.alerts, "seed \(seed): \(Self.difference(late.alerts, expected.alerts))")
    }
}

extension PackagingInvarianceTests {
    /// The daemon's default, wall-clock mode: days close by the wall clock, so a phone that syncs
    /// every 1–3 days delivers most samples after their day closed. Revision corrects what was
    /// evaluated early: once the alerts withdrawn on the way are set aside, the same cohort one
    /// sample a message as it happens and in syncs fires the same alerts on the same days (an
    /// alert confirmed by its late samples keeps the values it was first published with).
    @Test(arguments: [(21, 2), (22, 3)] as [(UInt64, Int)])
    func inWallClockModeSyncsEndWithTheAlertsOfLiveSamples(seed: UInt64, syncDays: Int) {
        func run(_ records: [TrafficRecord]) -> (alerts: [String], firing: [String]) {
            var ing = Ingestor(engine: Engine(program: ShardedReplayTests.program, configuration: ShardedReplayTests.configuration), clock: .wall)
            var out: [EngineOutput] = []
            var wall = Timestamp(milliseconds: .min / 2)
            for r in records {
                // A message arrives at the latest end of its samples (an event or profile: at once).
                for item in TrafficVariations.items(r.payload) where r.topic.hasSuffix("/samples") {
                    if case .success(let v) = JSONValue.parse(Array(item)), case .string(let end)? = v["end"], let t = ISO8601.parse(end)?.0 {
                        wall = max(wall, t)
                    }
                }
                ing.handle(topic: r.topic, payload: r.payload, now: wall, into: &out)
                ing.tick(now: wall, into: &out)
            }
            ing.tick(now: wall.adding(seconds: 2 * 86_400), into: &out)
            var transitions: [AlertTransition] = []
            for case .alert(let t) in out { transitions.append(t) }
            let withdrawn = Set(transitions.filter(\.isWithdrawal).map(\.id))
            // What fires at the end, and since when.
            var firing: [String] = []
            for u in Set(transitions.map(\.user)) {
                guard let st = ing.engine.state(of: u) else { continue }
                for (name, sm) in zip(st.alertNames, st.alertStates) {
                    if case .firing(let since, _, _, _) = sm.state { firing.append("\(u) \(name) \(since)") }
                }
            }
            // Which alerts, when (an alert evaluated before its late samples came and confirmed by
            // them keeps the values it was first published with).
            // Reminders follow the evaluations as they happened (a revision publishes none of an
            // alert that fired before and after it), so they are left out.
            let kept = transitions.filter { !withdrawn.contains($0.id) && !$0.isRepeat }
            return (kept.map { "\($0.rule) \($0.user) \($0.status) \($0.day) since \($0.activeSinceDay)" }.sorted(), firing.sorted())
        }
        var pop = Population(users: 8, days: 70, seed: seed)
        let live = run(Array(pop.traffic()))
        pop.syncDays = syncDays
        pop.samplesPerMessage = 50
        let synced = run(Array(pop.traffic()))
        #expect(live.alerts.count > 3)
        let onlySynced = Set(synced.alerts).subtracting(live.alerts).sorted()
        let onlyLive = Set(live.alerts).subtracting(synced.alerts).sorted()
        #expect(synced.alerts == live.alerts, "seed \(seed): only synced \(onlySynced)\nonly live \(onlyLive)")
        #expect(synced.firing == live.firing, "seed \(seed)")
    }
}
