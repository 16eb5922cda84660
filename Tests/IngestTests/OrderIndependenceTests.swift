import EngineTestSupport
import MobilityModel
import RuleLanguage
import TestSupport
import Testing

@testable import Ingest
@testable import RuleEngine

/// The same input gives the same alerts whether fed in one batch, sample by sample, or shuffled within a day.
@Suite struct OrderIndependenceTests {
    static func traffic(seed: UInt64) -> [(String, [String])] {
        var rng = SplitMix64(seed: seed)
        var msgs: [(String, [String])] = []
        for user in ["ana", "ben", "cy"] {
            var speed = Double.random(in: 0.8...1.3, using: &rng)
            for d in 1...40 {
                if Double.random(in: 0..<1, using: &rng) < 0.15 { continue }
                speed += Double.random(in: -0.08...0.06, using: &rng)
                var day: [String] = []
                for k in 0..<Int.random(in: 3...12, using: &rng) {
                    let t = utc.startOfDay(day0 + DayNumber(d)).adding(seconds: Int64(8 * 3600 + k * 3000 + Int.random(in: 0..<2000, using: &rng)))
                    let v = max(0.1, speed + Double.random(in: -0.1...0.1, using: &rng))
                    day.append(
                        "{\"id\":\"\(user)-\(d)-\(k)\",\"type\":\"walkingSpeed\",\"value\":\(v),\"unit\":\"m/s\",\"start\":\"\(t)\",\"end\":\"\(t)\",\"source\":{\"bundleId\":\"com.apple.health.x\"}}"
                    )
                }
                msgs.append((user, day))
            }
        }
        return msgs
    }

    static func run(_ messages: [(String, [UInt8])]) -> [String] {
        var ing = Ingestor(engine: Engine(program: program(engineTestRules)), clock: .event)
        var out: [EngineOutput] = []
        for (user, payload) in messages { ing.handle(topic: "mobility/v1/users/\(user)/samples", payload: payload, now: Timestamp(seconds: 0), into: &out) }
        return out.alerts.map(\.json).sorted()
    }

    @Test(arguments: [11, 12, 13] as [UInt64])
    func batchSingleAndShuffledAgree(seed: UInt64) {
        let days = Self.traffic(seed: seed)
        let single = Self.run(days.flatMap { u, d in d.map { (u, Array($0.utf8)) } })
        let batched = Self.run(days.map { u, d in (u, Array(("[" + d.joined(separator: ",") + "]").utf8)) })
        var rng = SplitMix64(seed: seed &+ 100)
        let shuffled = Self.run(days.flatMap { u, d in d.shuffled(using: &rng).map { (u, Array($0.utf8)) } })
        // users interleaved differently: a user's clock is their own, so this changes nothing either
        var perUser: [String: [(String, [String])]] = [:]
        for m in days { perUser[m.0, default: []].append(m) }
        var roundRobin: [(String, [String])] = []
        for i in 0..<40 { for u in ["cy", "ana", "ben"] where i < perUser[u]!.count { roundRobin.append(perUser[u]![i]) } }
        let interleaved = Self.run(roundRobin.flatMap { u, d in d.map { (u, Array($0.utf8)) } })
        #expect(!single.isEmpty, "seed \(seed): the traffic should produce some alerts")
        #expect(single == batched, "seed \(seed)")
        #expect(single == shuffled, "seed \(seed)")
        #expect(single == interleaved, "seed \(seed)")
    }
}
