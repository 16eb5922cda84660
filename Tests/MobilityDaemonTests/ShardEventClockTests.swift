import Foundation
import Ingest
import MobilityModel
import RuleEngine
import RuleLanguage
import Simulator
import TestSupport
import Testing

@testable import MobilityDaemon

/// The event clock's guards in a shard run in-process (``ShardHarness``, its wall clock at
/// 2026-12-01): an outlier sample does not move a user's clock ahead of the traffic.
@Suite struct ShardEventClockTests {
    /// One user's stream gets an outlier months ahead of the traffic (before the wall clock: only
    /// the confirmation rule can stop it) and one after the wall clock (`in_future`): the alerts
    /// are those of the traffic without them.
    @Test func outlierSamplesDoNotPoisonAUserInEventMode() throws {
        var timed: [TrafficGenerator.Timed] = []
        for (k, s) in BuiltinScenario.allCases.enumerated() { timed += s.generator(seed: UInt64(10 + k)).generate() }
        var records = timed.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element.record)
        let program = try #require(Checker.check(RuleSet.load([RepoPaths.rules]).sources).program)
        let expected = ScenarioVerifier.replay(records, program: program).map(\.json).sorted()
        #expect(expected.count >= 2)
        let topic = try #require(records.first { $0.topic.hasSuffix("/samples") }?.topic)
        let at = records.count / 3
        records.insert(TrafficRecord(topic: topic, payload: Array(sampleJSON(id: "outlier-1", value: 1.2, end: "2026-09-01T12:00:00Z").utf8)), at: at)
        records.insert(TrafficRecord(topic: topic, payload: Array(sampleJSON(id: "outlier-2", value: 1.2, end: "2099-01-01T12:00:00Z").utf8)), at: at + 5)

        let h = try ShardHarness(dir: TemporaryPath.make("mw-event-clock"), publishesSeries: false)
        h.send(bytes: records.map { ($0.topic, $0.payload) })
        h.stop()
        let got = h.published.messages(prefix: "mobility/v1/users/").filter { $0.topic.contains("/alerts/") && !$0.payload.isEmpty }
        #expect(got.map { String(decoding: $0.payload, as: UTF8.self) }.sorted() == expected)
        #expect(h.stats.ingest.rejected[.tooLate] == nil)
        #expect(h.stats.ingest.rejected[.inFuture] == 1)
    }
}
