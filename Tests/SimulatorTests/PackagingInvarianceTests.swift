import Foundation
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
