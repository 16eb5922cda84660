import CareReports
import Foundation
import Glibc
import MobilityModel
import RuleEngine
import RuleLanguage
import Simulator
import StateStore
import TestSupport
import Testing

/// Care-staff acknowledgements end to end: a real mosquitto, mobilityd, the plateau scenario
/// (stalled_recovery fires, then reminds every 7 days), restarts, mobilityctl ack and audit.
@Suite(.serialized) struct AcknowledgementTests {
    static let user = "jamie-plateau"
    static let ackTopic = "mobility/v1/teams/physio-north/commands/ack"
    static let rejectedTopic = "mobility/v1/teams/physio-north/commands/rejected"

    static func ack(_ id: String, by: String = "nurse.kim", note: String? = nil) -> String {
        "{\"alert\":\"\(id)\",\"user\":\"\(user)\",\"by\":\"\(by)\"" + (note.map { ",\"note\":\"\($0)\"" } ?? "") + "}"
    }

    /// The story ends firing; twelve more days of walking (past recovery day 60, where the rule
    /// no longer holds) resolve it once keep_firing_for has passed.
    static func resolvingDays(_ pub: MQTTRecorder) throws -> Int {
        for d in 1...12 {
            let day = String(format: "2026-04-%02d", d)
            try pub.publish(samplesTopic(user), sampleJSON(id: "tail-\(d)", value: 1.3, end: "\(day)T20:00:00Z"))
        }
        return 12
    }

    /// A care-teams file (0600) in `dir` that makes `jamie-plateau` physio-north's patient: a
    /// team acts on its own patients' alerts only.
    static func careTeams(in dir: String) throws -> String {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let file = dir + "/care-teams"
        try "\(user) physio-north\n".write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o600)
        return file
    }

    func rejections(_ rec: MQTTRecorder) -> [String] {
        rec.messages(prefix: Self.rejectedTopic).compactMap { m in
            guard case .success(let v) = JSONValue.parse(m.payload), case .string(let r)? = v["reason"] else { return nil }
            return r
        }
    }

    @Test func acknowledgeStopsRemindersSurvivesRestartAndResolutionClearsIt() throws {
        let scenario = try Scenario.load(RepoPaths.root + "/simulator/scenarios/jamie-plateau.scenario")
        let records = ScenarioVerifier.traffic([scenario])
        let program = try #require(Checker.check(RuleSet.load([RepoPaths.rules]).sources).program)
        let expected = ScenarioVerifier.replay(records, program: program).filter { $0.rule == "stalled_recovery" }
        // Without an acknowledgement the instance reminds at least once, then resolves.
        let fired = try #require(expected.first { $0.status == .firing && !$0.isRepeat })
        #expect(expected.contains { $0.id == fired.id && $0.isRepeat })

        let broker = try MosquittoBroker()
        let state = TemporaryPath.make("mw-state")
        let teamsDir = TemporaryPath.make("mw-teams")
        defer {
            try? FileManager.default.removeItem(atPath: state)
            try? FileManager.default.removeItem(atPath: teamsDir)
        }
        let options = ["--publish-series", "false", "--care-teams", try Self.careTeams(in: teamsDir)]
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/alerts/#", "mobility/v1/audit", "mobility/v1/teams/+/commands/rejected"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        var daemon = try DaemonUnderTest(broker: broker, state: state, extra: options)
        let alertTopic = alertTopic(Self.user, "stalled_recovery")

        // Day by day until it fires.
        let perDay = max(1, records.count / 90)
        var next = 0
        while next < records.count, !rec.messages(prefix: alertTopic).contains(where: { AlertTransition.parse($0.payload)?.id == fired.id }) {
            let end = min(next + perDay, records.count)
            for r in records[next..<end] { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
            next = end
            #expect(daemon.waitProcessed(next, timeout: 60))
        }
        #expect(rec.messages(prefix: alertTopic).count == 1, "acknowledged before any reminder")

        // Refused, nothing changed: unknown id, malformed, too long a note, a member we do not know.
        try pub.publish(Self.ackTopic, Self.ack("00000000deadbeef"))
        try pub.publish(Self.ackTopic, "{not json")
        try pub.publish(Self.ackTopic, Self.ack(fired.id, note: String(repeating: "x", count: 501)))
        try pub.publish(Self.ackTopic, "{\"alert\":\"\(fired.id)\",\"user\":\"\(Self.user)\",\"by\":\"x\",\"colour\":\"red\"}")
        // Over the command limit (4 KiB), and over --max-payload (not even copied by the transport).
        try pub.publish(Self.ackTopic, Self.ack(fired.id, note: String(repeating: "x", count: 5000)))
        try pub.publish(Self.ackTopic, Self.ack(fired.id, note: String(repeating: "x", count: 300_000)))
        #expect(
            eventually { rejections(rec) == ["unknown_alert", "malformed_json", "invalid_field", "unknown_field", "payload_too_large", "payload_too_large"] },
            "\(rejections(rec))")
        #expect(rec.messages(prefix: "mobility/v1/audit").isEmpty)

        // Accepted: the retained firing message carries it, the audit topic says it.
        try pub.publish(Self.ackTopic, Self.ack(fired.id, note: "called, physio Tuesday"))
        #expect(eventually { rec.messages(prefix: alertTopic).last.flatMap { AlertTransition.parse($0.payload)?.acknowledged } != nil })
        let acked = try #require(AlertTransition.parse(rec.messages(prefix: alertTopic).last!.payload))
        #expect(
            acked.id == fired.id && acked.status == .firing && acked.acknowledged?.by == "nurse.kim" && acked.acknowledged?.note == "called, physio Tuesday")
        #expect(eventually { rec.messages(prefix: "mobility/v1/audit").count == 1 })
        let audit = try #require(rec.messages(prefix: "mobility/v1/audit").first)
        #expect(
            audit.text.contains("\"action\":\"acknowledge\"") && audit.text.contains("\"subject\":\"\(fired.id)\"")
                && audit.text.contains("\"team\":\"physio-north\""))
        let retained = try MQTTRecorder(url: broker.url, filters: [alertTopic])
        #expect(eventually { retained.messages().last.flatMap { AlertTransition.parse($0.payload)?.acknowledged?.by } == "nurse.kim" })
        retained.stop()

        // A second acknowledgement of the same instance is refused, before and after a restart.
        try pub.publish(Self.ackTopic, Self.ack(fired.id, by: "dr.lee"))
        #expect(eventually { rejections(rec).last == "already_acknowledged" })
        #expect(daemon.waitIdle())
        #expect(daemon.metric("mobilityd_acknowledgements_total{result=\"accepted\"}") == 1)
        #expect(daemon.metric("mobilityd_acknowledgements_total{result=\"already_acknowledged\"}") == 1)
        #expect(daemon.metric("mobilityd_acknowledgements_total{result=\"unknown_alert\"}") == 1)
        #expect(daemon.metric("mobilityd_acknowledgements_total{result=\"malformed_json\"}") == 1)
        #expect(daemon.metric("mobilityd_acknowledgements_total{result=\"payload_too_large\"}") == 2)
        #expect(daemon.process.stop() == 0)
        daemon = try DaemonUnderTest(broker: broker, state: state, extra: options)
        try pub.publish(Self.ackTopic, Self.ack(fired.id, by: "dr.lee"))
        #expect(eventually { rejections(rec).count == 8 && rejections(rec).last == "already_acknowledged" }, "\(rejections(rec))")

        // The rest of the story: no reminder while acknowledged; the resolution clears the retained topic.
        for r in records[next...] { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
        let tail = try Self.resolvingDays(pub)
        #expect(daemon.waitProcessed(records.count - next + tail, timeout: 60))
        #expect(eventually { rec.messages(prefix: alertTopic).contains { AlertTransition.parse($0.payload)?.status.isEnded == true } })
        #expect(daemon.waitIdle())
        #expect(try rec.barrier())
        let mine = rec.messages(prefix: alertTopic).compactMap { AlertTransition.parse($0.payload) }.filter { $0.id == fired.id }
        #expect(!mine.contains { $0.isRepeat }, "a reminder of an acknowledged instance was sent")
        #expect((daemon.metric("mobilityd_alert_reminders_acknowledged_total") ?? 0) >= 1)
        #expect(rec.messages(prefix: alertTopic).last?.payload.isEmpty == true)  // retained cleared

        // Resolved: refused with its reason; the store keeps no acknowledgement of it, the audit one row.
        try pub.publish(Self.ackTopic, Self.ack(fired.id, by: "dr.lee"))
        #expect(eventually { rejections(rec).last == "alert_resolved" }, "\(rejections(rec))")
        #expect(daemon.process.stop() == 0)
        // The withheld reminders are in the history, marked, so that a later week's report quotes
        // what the alert said that week; before, its text stopped at the firing day.
        let history = try StateStore(path: state + "/state.sqlite").history(of: Self.user, from: .min, through: .max)
        let episode = try #require(history.alerts.first { $0.id == fired.id })
        let reminders = expected.filter { $0.id == fired.id && $0.isRepeat }
        #expect(episode.texts.filter(\.firing).map(\.day) == [fired.day.dayNumber] + reminders.map(\.day.dayNumber))
        #expect(episode.texts.filter(\.firing).map(\.headline) == [fired.headline] + reminders.map(\.headline))
        let table = try ChildProcess(ChildProcess.product("mobilityctl"), ["audit", "--state", state])
        #expect(table.wait() == 0)
        #expect(table.log.contains("acknowledge") && table.log.contains("nurse.kim") && table.log.contains(fired.id), "\(table.log)")
        let json = try ChildProcess(ChildProcess.product("mobilityctl"), ["audit", "--state", state, "--output", "json"])
        #expect(json.wait() == 0)
        let lines = json.log.split(separator: "\n").filter { $0.hasPrefix("{") }
        #expect(lines.count == 1 && lines[0].contains("\"note\":\"called, physio Tuesday\""), "\(json.log)")
    }

    @Test func reFireIsANewInstanceAndMobilityctlAckSendsIt() throws {
        let scenario = try Scenario.load(RepoPaths.root + "/simulator/scenarios/jamie-plateau.scenario")
        let records = ScenarioVerifier.traffic([scenario])
        let broker = try MosquittoBroker()
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/alerts/#", "mobility/v1/teams/+/commands/rejected"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        let teamsDir = TemporaryPath.make("mw-teams")
        defer { try? FileManager.default.removeItem(atPath: teamsDir) }
        let daemon = try DaemonUnderTest(broker: broker, extra: ["--publish-series", "false", "--care-teams", try Self.careTeams(in: teamsDir)])
        defer { try? FileManager.default.removeItem(atPath: daemon.statePath) }
        for r in records { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
        let tail = try Self.resolvingDays(pub)
        #expect(daemon.waitProcessed(records.count + tail, timeout: 60))
        #expect(daemon.waitIdle())
        let topic = alertTopic(Self.user, "stalled_recovery")
        let all = rec.messages(prefix: topic).compactMap { AlertTransition.parse($0.payload) }
        let resolvedID = try #require(all.first { $0.status.isEnded }?.id)
        // mobilityctl ack of the resolved instance: the broker takes it, the daemon refuses it, and
        // mobilityctl says so (exit 1, with the reason).
        let ctl = try ChildProcess(
            ChildProcess.product("mobilityctl"),
            [
                "ack", "--broker", broker.url, "--team", "physio-north", "--user", Self.user,
                "--alert", resolvedID, "--by", "nurse.kim", "--note", "seen"
            ])
        #expect(ctl.wait() == 1, "\(ctl.log)")
        #expect(ctl.log.contains("mobilityctl ack: refused (alert_resolved): the alert instance has ended"), "\(ctl.log)")
        #expect(eventually { rejections(rec) == ["alert_resolved"] }, "\(rejections(rec))")
        // A new instance (a re-fire) has a new id: the old acknowledgement would not cover it.
        let ids = Set(all.filter { $0.status == .firing && !$0.isRepeat }.map(\.id))
        #expect(ids.count == all.filter { $0.status == .firing && !$0.isRepeat }.count)

        // Wrong arguments: usage errors, exit 2, nothing published.
        for args in [
            ["ack"], ["ack", "--broker", broker.url, "--team", "t", "--user", Self.user, "--alert", "XYZ", "--by", "n"],
            ["ack", "--broker", broker.url, "--team", "t/x", "--user", Self.user, "--alert", "ab", "--by", "n"],
            ["ack", "--broker", broker.url, "--team", "t", "--user", Self.user, "--alert", "ab", "--by", "n", "--note", String(repeating: "x", count: 501)],
            ["ack", "--bogus"], ["ack", "--broker", broker.url, "--team", "t", "--user", Self.user, "--alert", "ab", "--by", "n", "--wait", "-1"],
            ["audit"], ["audit", "--state", daemon.statePath, "--output", "yaml"]
        ] {
            let p = try ChildProcess(ChildProcess.product("mobilityctl"), args)
            #expect(p.wait() == 2, "\(args): \(p.log)")
            #expect(p.log.contains("mobilityctl"), "\(p.log)")
        }
        let missing = try ChildProcess(ChildProcess.product("mobilityctl"), ["audit", "--state", "/nonexistent-mw"])
        #expect(missing.wait() == 1 && missing.log.contains("no state store"))
        #expect(try rec.barrier())
        #expect(rejections(rec) == ["alert_resolved"])
    }
}
