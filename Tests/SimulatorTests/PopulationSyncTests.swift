import Foundation
import Ingest
import MobilityModel
import MobilityWire
import RuleEngine
import Simulator
import Testing

/// `mobility-sim population --sync-days N`: phones that sync every N days, each sync in messages
/// running across its days (multi-day messages).
@Suite struct PopulationSyncTests {
    /// The samples of a samples payload: (id, end) of each.
    static func samples(_ payload: [UInt8]) -> [(id: String, end: String)] {
        guard case .success(let v) = JSONValue.parse(payload) else { return [] }
        let items: [JSONValue]
        if case .array(let a) = v { items = a } else { items = [v] }
        return items.compactMap { item -> (String, String)? in
            guard case .string(let id)? = item["id"], case .string(let end)? = item["end"] else { return nil }
            return (id, end)
        }
    }

    static func traffic(syncDays: Int?, samplesPerMessage: Int?) -> [TrafficRecord] {
        var pop = Population(users: 12, days: 10, seed: 5)
        pop.samplesPerMessage = samplesPerMessage
        pop.syncDays = syncDays
        return Array(pop.traffic())
    }

    @Test func aSyncCarriesTheSameSamplesInMessagesRunningAcrossItsDays() {
        let plain = Self.traffic(syncDays: nil, samplesPerMessage: nil)
        let synced = Self.traffic(syncDays: 3, samplesPerMessage: 50)
        let layout = TopicLayout()
        func ids(_ t: [TrafficRecord]) -> [String] { t.filter { $0.topic.hasSuffix("/samples") }.flatMap { Self.samples($0.payload).map(\.id) }.sorted() }
        #expect(ids(plain).count > 3000)
        #expect(ids(synced) == ids(plain))
        // The other records are the same too (the profile first, events after the samples they follow).
        #expect(synced.filter { !$0.topic.hasSuffix("/samples") }.count == plain.filter { !$0.topic.hasSuffix("/samples") }.count)
        var spanning = 0
        var lastDay: [String: String] = [:]
        for r in synced where r.topic.hasSuffix("/samples") {
            let s = Self.samples(r.payload)
            #expect((1...50).contains(s.count), "\(s.count) samples in one message")
            let days = Set(s.map { $0.end.prefix(10) })
            if days.count >= 2 { spanning += 1 }
            guard case .inbound(let user, .samples) = layout.parse(r.topic) else { Issue.record("topic \(r.topic)"); continue }
            #expect(s.allSatisfy { $0.id.hasPrefix(user + "-") }, "one user's samples a message")
            lastDay[user] = String(s.map { $0.end.prefix(10) }.max()!)
        }
        // At ~40 samples a day, a message of 50 often runs from one day into the next.
        #expect(spanning * 4 > synced.filter { $0.topic.hasSuffix("/samples") }.count)
        // Hourly batches never cross a day.
        #expect(plain.filter { $0.topic.hasSuffix("/samples") }.allSatisfy { Set(Self.samples($0.payload).map { $0.end.prefix(10) }).count == 1 })
    }

    @Test func aSyncedCohortIsAcceptedWholeByTheEventClock() {
        // Every sample of a 3-day sync arrives within the lateness: none is rejected, all are counted.
        var ing = Ingestor(engine: Engine(program: ShardedReplayTests.program, configuration: ShardedReplayTests.configuration), clock: .event)
        var out: [EngineOutput] = []
        var expected = 0
        for r in Self.traffic(syncDays: 3, samplesPerMessage: 50) {
            if r.topic.hasSuffix("/samples") { expected += Self.samples(r.payload).count }
            ing.handle(topic: r.topic, payload: r.payload, now: Timestamp(milliseconds: 0), into: &out)
        }
        let rejected = out.filter { if case .rejected = $0 { true } else { false } }
        #expect(rejected.isEmpty, "\(rejected.prefix(3))")
        #expect(ing.counters.samplesAccepted == expected)
    }

    @Test func withoutSyncDaysABlockIsItsDaysAsGenerated() {
        let (g, _) = Population(users: 3, days: 6, seed: 2).user(1)
        #expect(g.generate(block: 1...6).map(\.record) == (1...6).flatMap { g.generate(day: $0) }.map(\.record))
    }
}
