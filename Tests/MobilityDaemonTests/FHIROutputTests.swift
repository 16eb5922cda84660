import Foundation
import MobilityDaemon
import MobilityModel
import Simulator
import TestSupport
import Testing

/// FHIR: a live mobilityd with `--fhir on` over a real mosquitto and SQLite publishes
/// each alert transition as a Flag and each series value as an Observation, valid FHIR R4 by an
/// independent validator; retained Flags are exactly the active ones; and `mobilityctl fhir
/// export` of its state directory gives the same Flags in a valid Bundle.
@Suite(.serialized) struct FHIROutputTests {
    static func object(_ bytes: [UInt8]) -> JSONValue? { if case .success(let v) = JSONValue.parse(bytes) { v } else { nil } }
    static func str(_ v: JSONValue?) -> String? { if case .string(let s)? = v { s } else { nil } }

    @Test func theDaemonPublishesValidFlagsAndObservationsAndTheExportAgrees() throws {
        let story = BuiltinScenario.jamiePlateau, user = story.rawValue
        let records = story.generator(seed: 3).generate().map(\.record)
        let broker = try MosquittoBroker()
        let state = TemporaryPath.make("mw-fhir")
        defer { try? FileManager.default.removeItem(atPath: state) }
        var daemon: DaemonUnderTest? = try DaemonUnderTest(broker: broker, state: state, extra: ["--fhir", "on"])
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/fhir/#", "mobility/v1/users/+/alerts/#", "mobility/v1/users/+/series/#"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        for r in records { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
        #expect(daemon!.waitProcessed(records.count, timeout: 60))
        #expect(daemon!.waitIdle())
        #expect(try rec.barrier())
        #expect(daemon!.process.stop() == 0)
        daemon = nil

        // What the broker delivered: alert transitions and series points, and their FHIR copies.
        var alerts: [(id: String, status: String)] = [], points = 0
        var finalValue: [String: Bool] = [:]  // series/day → whether its latest point has a value
        var flags: [(topic: String, id: String, status: String, payload: [UInt8])] = [], observations: [[UInt8]] = []
        var entries: [JSONValue] = []  // the timeline entries' Observations (the story's injury)
        for m in rec.messages() where !m.payload.isEmpty {
            guard let v = Self.object(m.payload) else { Issue.record("not JSON on \(m.topic): \(m.text)"); continue }
            if m.topic.contains("/fhir/users/\(user)/Flag/") {
                #expect(Self.str(v["resourceType"]) == "Flag")
                guard case .array(let ids)? = v["identifier"], let alertID = Self.str(ids.first?["value"]) else {
                    Issue.record("no identifier: \(m.text)"); continue
                }
                flags.append((m.topic, alertID, Self.str(v["status"]) ?? "", m.payload))
                #expect(m.topic.hasSuffix("/Flag/" + (Self.str(v["id"]) ?? "?")), "the topic names the resource id")
            } else if m.topic.contains("/fhir/users/\(user)/Observation/mw-event-") {
                #expect(Self.str(v["resourceType"]) == "Observation")
                entries.append(v)
                observations.append(m.payload)
            } else if m.topic.contains("/fhir/users/\(user)/Observation/") {
                #expect(Self.str(v["resourceType"]) == "Observation")
                observations.append(m.payload)
            } else if m.topic.contains("/alerts/") {
                alerts.append((Self.str(v["id"]) ?? "", Self.str(v["status"]) ?? ""))
            } else if m.topic.hasSuffix("/series"), let day = DailySeries.parse(m.payload) {
                for p in day.points {
                    finalValue["\(p.name)/\(p.day)"] = p.value != nil
                    if p.value != nil || p.revised { points += 1 }
                }
            }
        }
        #expect(!alerts.isEmpty, "the plateau story alerts")
        // One Flag per transition, in order, active while firing and inactive once resolved.
        #expect(flags.map(\.id) == alerts.map(\.id))
        #expect(flags.map(\.status) == alerts.map { $0.status == "firing" ? "active" : "inactive" })
        #expect(observations.count - entries.count == points, "an Observation per series value")
        // The gateway's injury, as an Observation coded by SNOMED CT, with no staff performer.
        #expect(entries.count == 1)
        #expect(entries.first.map { $0.text.contains("\"code\":\"417746004\"") && $0["performer"] == nil } == true, "\(entries)")
        #expect(points > 100)

        let verdict = try FHIRValidator.validate(
            flags.map { String(decoding: $0.payload, as: UTF8.self) } + observations.map { String(decoding: $0, as: UTF8.self) })
        #expect(verdict.valid, "\(verdict.output.split(separator: "\n").filter { $0.hasPrefix("invalid") }.prefix(5))")

        // Retained: exactly the Flags of instances still firing (resolved ones were cleared).
        let stillFiring = Set(Dictionary(alerts.map { ($0.id, $0.status) }, uniquingKeysWith: { _, b in b }).filter { $0.value == "firing" }.keys)
        let late = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/fhir/users/+/Flag/#"])
        #expect(try late.barrier())
        let retained = late.messages().filter { !$0.payload.isEmpty }.compactMap { Self.object($0.payload) }
        #expect(
            Set(retained.compactMap { v -> String? in if case .array(let ids)? = v["identifier"] { Self.str(ids.first?["value"]) } else { nil } })
                == stillFiring)
        #expect(retained.allSatisfy { Self.str($0["status"]) == "active" })

        // The export of the state directory: a valid Bundle holding each instance's latest Flag,
        // byte for byte what the daemon published last for it, and an Observation per value.
        let out = state + "/export.json"
        let ctl = try ChildProcess(ChildProcess.product("mobilityctl"), ["fhir", "export", "--state", state, "--user", user, "-o", out])
        #expect(ctl.wait() == 0, "\(ctl.log)")
        let bundle = try String(contentsOfFile: out, encoding: .utf8)
        var st = stat()
        #expect(stat(out, &st) == 0 && st.st_mode & 0o077 == 0, "the export is readable by its owner only")
        let bundleVerdict = try FHIRValidator.validate([bundle])
        #expect(bundleVerdict.valid, "\(bundleVerdict.output.prefix(2000))")
        guard let b = Self.object(Array(bundle.utf8)), case .array(let resources)? = b["entry"] else {
            Issue.record("no entries: \(bundle.prefix(300))"); return
        }
        var lastFlag: [String: String] = [:]
        for f in flags { lastFlag[f.id] = String(decoding: f.payload, as: UTF8.self) }
        let exportedFlags = resources.filter { Self.str($0["resource"]?["resourceType"]) == "Flag" }
        let exportedEntries = resources.filter { Self.str($0["resource"]?["id"])?.hasPrefix("mw-event-") == true }
        #expect(exportedEntries.map { $0["resource"] } == entries.map { Optional($0) }, "the export's timeline entry is the one published")
        #expect(exportedFlags.count == lastFlag.count)
        for e in exportedFlags {
            guard case .array(let ids)? = e["resource"]?["identifier"], let id = Self.str(ids.first?["value"]) else { continue }
            // Compared as parsed JSON: the same resource, the same content.
            #expect(e["resource"] == lastFlag[id].flatMap { Self.object(Array($0.utf8)) }, "Flag of \(id)")
        }
        let nobody = try ChildProcess(ChildProcess.product("mobilityctl"), ["fhir", "export", "--state", state, "--user", "nobody", "-o", out])
        #expect(nobody.wait() == 1)
        #expect(nobody.log.contains("no history of user 'nobody'"), "\(nobody.log)")
        #expect(
            resources.count - exportedFlags.count - exportedEntries.count == finalValue.values.filter { $0 }.count, "an Observation per day's latest value")
    }

    @Test func theFHIROptionTakesOnOrOff() throws {
        #expect(try DaemonConfiguration.load(arguments: [], environment: [:]).fhir == false)
        #expect(try DaemonConfiguration.load(arguments: ["--fhir", "on"], environment: [:]).fhir == true)
        #expect(try DaemonConfiguration.load(arguments: [], environment: ["MOBILITYD_FHIR": "on"]).fhir == true)
        #expect(throws: DaemonConfiguration.Problem.self) { try DaemonConfiguration.load(arguments: ["--fhir", "yes"], environment: [:]) }
    }
}
