import Foundation
import Glibc
import MobilityModel
import RuleEngine
import RuleLanguage
import Simulator
import Testing
import TestSupport

/// Durable state end to end: restarts and crashes of mobilityd against a real mosquitto.
@Suite(.serialized) struct DurabilityTests {
    static func expectedAlerts(_ records: [TrafficRecord]) throws -> [String] {
        let program = try #require(Checker.check(RuleSet.load([RepoPaths.rules]).sources).program)
        return ScenarioVerifier.replay(records, program: program).map(\.json).sorted()
    }

    @Test func cleanRestartNeitherForgetsNorRefires() throws {
        let scenario = try Scenario.load(RepoPaths.root + "/simulator/scenarios/jamie-plateau.scenario")
        let records = ScenarioVerifier.traffic([scenario])
        let expected = try Self.expectedAlerts(records)
        #expect(expected.count >= 2)
        let broker = try MosquittoBroker()
        let state = NSTemporaryDirectory() + "mw-state-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: state) }
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/alerts/#"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        // First run: up to day ~70 (the stall has fired), then a clean stop.
        let cut = records.count * 70 / 90
        var daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false"])
        for r in records[..<cut] { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
        #expect(daemon.waitProcessed(cut, timeout: 60))
        #expect(daemon.process.stop() == 0)
        let firstRun = rec.messages().filter { !$0.payload.isEmpty }.count
        #expect(firstRun >= 1)
        // Second run on the same state: the baseline and the firing alert are remembered.
        daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false"])
        #expect(daemon.process.log.contains("users=1"))
        for r in records[cut...] { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
        #expect(daemon.waitProcessed(records.count - cut, timeout: 60))
        #expect(eventually { rec.messages().filter { !$0.payload.isEmpty }.count >= expected.count })
        usleep(300_000)
        #expect(rec.messages().filter { !$0.payload.isEmpty }.map(\.text).sorted() == expected)
    }

    @Test func killNineAtRandomMomentsLosesAndDuplicatesNothing() throws {
        let records = Array(Population(users: 30, days: 45, seed: 5).traffic())
        let expected = try Self.expectedAlerts(records)
        #expect(expected.count > 10)
        let broker = try MosquittoBroker()
        let state = NSTemporaryDirectory() + "mw-state-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: state) }
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/alerts/#"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        var rng = SplitMix64(seed: 77)
        var daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false"])
        let chunk = 1000
        var kills = 0
        var next = 0
        var replayedRecords = 0
        while next < records.count {
            for r in records[next..<min(next + chunk, records.count)] { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
            next += chunk
            if kills < 4, Bool.random(using: &rng) || next >= records.count - chunk {
                usleep(UInt32.random(in: 0...150_000, using: &rng)) // somewhere in the middle of processing
                daemon.process.signal(SIGKILL)
                _ = daemon.process.wait()
                kills += 1
                daemon = try DaemonUnderTest(broker: broker, state: state, extra: ["--publish-series", "false"])
                if let r = daemon.process.log.range(of: "journal_records=") {
                    replayedRecords += Int(daemon.process.log[r.upperBound...].prefix { $0.isNumber }) ?? 0
                }
            }
        }
        #expect(kills >= 3)
        #expect(replayedRecords > 0) // restarts really recovered from the journal
        #expect(eventually(timeout: 60) { rec.messages().filter { !$0.payload.isEmpty }.count >= expected.count })
        usleep(1_000_000)
        let live = rec.messages().filter { !$0.payload.isEmpty }.map(\.text).sorted()
        #expect(Set(live) == Set(expected), "lost: \(Set(expected).subtracting(live).count), spurious: \(Set(live).subtracting(expected).count)")
        #expect(live.count == expected.count, "\(live.count - expected.count) duplicates")
    }
}
