import Foundation
import Ingest
import MobilityModel
import RuleEngine
import RuleLanguage
import Simulator
import TestSupport
import Testing

/// The same traffic through `mobilityd --clock event` and through `mobilityctl replay` gives the
/// same alert transitions.
@Suite(.serialized) struct ReplayEquivalenceTests {
    @Test func daemonInEventModeMatchesReplay() throws {
        // Three stories, interleaved in publish order as gateways would send them.
        var timed: [TrafficGenerator.Timed] = []
        for (k, s) in BuiltinScenario.allCases.enumerated() { timed += s.generator(seed: UInt64(10 + k)).generate() }
        let records = timed.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element.record)
        let file = TemporaryPath.make("mw-traffic", suffix: ".jsonl")
        try (records.map(\.line).joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }

        let replay = try ChildProcess(ChildProcess.product("mobilityctl"), ["replay", "--rules", RepoPaths.rules, "--no-final-close", file])
        #expect(replay.wait(timeout: 60) == 0)
        let expected = replay.log.split(separator: "\n").map(String.init).filter { $0.hasPrefix("{") }.sorted()
        #expect(expected.count >= 2, "the plateau story should alert:\n\(replay.log)")

        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker, extra: ["--publish-series", "false", "--shards", "3"])
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/alerts/#"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        for r in records { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
        #expect(daemon.waitProcessed(records.count, timeout: 60))
        let got = { rec.messages().filter { !$0.payload.isEmpty }.map(\.text).sorted() }
        #expect(eventually { got().count >= expected.count })
        #expect(daemon.waitIdle())
        #expect(try rec.barrier())  // nothing more arrives
        #expect(got() == expected)
    }

    /// A cohort whose phones sync every two days, published live in other packings (one sample to
    /// 300 a message) with messages re-sent as gateways do after a lost connection and injuries
    /// entered 1–14 days late, gives the alerts of the original traffic's replay once the alerts
    /// the late injuries explain are withdrawn.
    @Test func packingReSendsAndLateInjuriesChangeNoAlertOfTheDaemon() throws {
        var pop = Population(users: 8, days: 70, seed: 7)
        pop.syncDays = 2
        pop.samplesPerMessage = 50
        let records = Array(pop.traffic())
        let program = try #require(Checker.check(RuleSet.load([RepoPaths.rules]).sources).program)
        let expected = ScenarioVerifier.replay(records, program: program).map(\.json).sorted()
        #expect(expected.count >= 5)
        let late = TrafficVariations.delayInjuries(records) { user in 1 + (Int(user.dropFirst()) ?? 0) * 5 % 14 }
        let variant = TrafficVariations.resend(TrafficVariations.repack(late, seed: 7), seed: 7)
        #expect(variant.count != records.count)

        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker, extra: ["--publish-series", "false", "--shards", "2"])
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/alerts/#"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        for r in variant { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
        #expect(daemon.waitProcessed(variant.count, timeout: 120))
        #expect(daemon.waitIdle())
        #expect(try rec.barrier())  // nothing more arrives
        let live = rec.messages().filter { !$0.payload.isEmpty }.map { ($0.text, AlertTransition.parse($0.payload)) }
        let withdrawn = Set(live.compactMap { $0.1?.reason == "revised" ? $0.1?.id : nil })
        #expect(!withdrawn.isEmpty, "the late injuries explained no alert: nothing tested")
        #expect(live.filter { !withdrawn.contains($0.1?.id ?? "") }.map(\.0).sorted() == expected)
    }
}

/// Every shipped scenario passes `mobility-sim verify` against a live daemon, and `record` +
/// `mobilityctl replay` gives the same alerts the daemon published.
@Suite(.serialized) struct ScenarioVerificationTests {
    @Test func shippedScenariosPassAgainstALiveDaemon() throws {
        let scenarios = RepoPaths.root + "/simulator/scenarios"
        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker, extra: ["--publish-series", "false"])
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/alerts/#"])
        let verify = try ChildProcess(ChildProcess.product("mobility-sim"), ["verify", scenarios, "--broker", broker.url])
        #expect(verify.wait(timeout: 120) == 0, "\(verify.log)")
        #expect(verify.log.contains("11 passed, 0 failed"), "\(verify.log)")

        let file = TemporaryPath.make("mw-scenarios", suffix: ".jsonl")
        defer { try? FileManager.default.removeItem(atPath: file) }
        let record = try ChildProcess(ChildProcess.product("mobility-sim"), ["record", scenarios, "-o", file])
        #expect(record.wait() == 0)
        let replay = try ChildProcess(ChildProcess.product("mobilityctl"), ["replay", "--rules", RepoPaths.rules, "--no-final-close", file])
        #expect(replay.wait(timeout: 60) == 0)
        let expected = replay.log.split(separator: "\n").map(String.init).filter { $0.hasPrefix("{") }.sorted()
        let live = rec.messages().filter { !$0.payload.isEmpty }.map(\.text).sorted()
        #expect(!expected.isEmpty)
        #expect(live == expected)
        _ = daemon
    }
}
