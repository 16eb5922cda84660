import Foundation
import Glibc
import MobilityModel
import RuleEngine
import RuleLanguage
import Simulator
import StateStore
import TestSupport
import Testing

/// Silences end to end: a real mosquitto, mobilityd with a care-teams file, the plateau scenario
/// (stalled_recovery fires, reminds every 7 days, resolves in the tail), mobilityctl silence,
/// restarts, a reload, expiry by hand, and every bad command refused. (Expiry by the clock, on a
/// clock the test moves: ``SilenceDeskTests``.)
@Suite(.serialized) struct SilenceDaemonTests {
    static let user = "jamie-plateau"
    static let commands = "mobility/v1/teams/physio-north/commands/silence"

    func rejections(_ rec: MQTTRecorder) -> [String] {
        rec.messages(prefix: "mobility/v1/teams/").filter { $0.topic.hasSuffix("/commands/rejected") }.compactMap { m in
            guard case .success(let v) = JSONValue.parse(m.payload), case .string(let r)? = v["reason"] else { return nil }
            return r
        }
    }

    func ctl(_ args: [String]) throws -> ChildProcess { try ChildProcess(ChildProcess.product("mobilityctl"), args) }

    static func add(_ matchers: String, ends: String, starts: String? = nil, extra: String = "") -> String {
        "{\"action\":\"add\",\"matchers\":[\(matchers)]," + (starts.map { "\"startsAt\":\"\($0)\"," } ?? "")
            + "\"endsAt\":\"\(ends)\",\"createdBy\":\"nurse.kim\",\"comment\":\"on leave\"\(extra)}"
    }

    /// A team removed from the care-teams file while mobilityd was stopped has its retained index
    /// cleared at the next start (the store keeps which teams' indexes were published); a team
    /// still known keeps its index.
    @Test func theIndexOfATeamRemovedWhileStoppedIsClearedAtTheNextStart() throws {
        let broker = try MosquittoBroker()
        let dir = TemporaryPath.make("mw-silence-index")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let teamsFile = dir + "/care-teams"
        func teams(_ text: String) throws {
            try text.write(toFile: teamsFile, atomically: true, encoding: .utf8)
            chmod(teamsFile, 0o600)
        }
        try teams("jamie physio-north\nsam gait-lab\n")
        let options = ["--publish-series", "false", "--care-teams", teamsFile]
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/teams/+/silences"])
        let index = { (team: String) in rec.messages(prefix: "mobility/v1/teams/\(team)/silences").last?.text }
        var daemon = try DaemonUnderTest(broker: broker, state: dir + "/state", extra: options)
        #expect(eventually { index("gait-lab") == "{\"team\":\"gait-lab\",\"silences\":[]}" && index("physio-north") != nil })
        #expect(daemon.process.stop() == 0)

        try teams("jamie physio-north\n")
        let before = rec.messages(prefix: "mobility/v1/teams/physio-north/silences").count
        daemon = try DaemonUnderTest(broker: broker, state: dir + "/state", extra: options)
        #expect(eventually { index("gait-lab") == "" }, "\(rec.messages().map { "\($0.topic) \($0.text)" })")
        #expect(eventually { rec.messages(prefix: "mobility/v1/teams/physio-north/silences").count > before })
        #expect(index("physio-north") == "{\"team\":\"physio-north\",\"silences\":[]}")
        // The broker keeps no index of the removed team for a new subscriber.
        let late = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/teams/+/silences"])
        #expect(eventually { !late.messages(prefix: "mobility/v1/teams/physio-north/silences").isEmpty })
        #expect(late.messages(prefix: "mobility/v1/teams/gait-lab/silences").allSatisfy { $0.payload.isEmpty })
        #expect(daemon.process.stop() == 0)
    }

    @Test func silencedTransitionsAreRecordedAndMarkedButNotDeliveredUntilTheSilenceEnds() throws {
        let scenario = try Scenario.load(RepoPaths.root + "/simulator/scenarios/jamie-plateau.scenario")
        let records = ScenarioVerifier.traffic([scenario])
        let program = try #require(Checker.check(RuleSet.load([RepoPaths.rules]).sources).program)
        let expected = ScenarioVerifier.replay(records, program: program).filter { $0.rule == "stalled_recovery" }
        let fired = try #require(expected.first { $0.status == .firing && !$0.isRepeat })
        #expect(expected.contains { $0.id == fired.id && $0.isRepeat }, "the story reminds at least once")

        let broker = try MosquittoBroker()
        let dir = TemporaryPath.make("mw-silence")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let teamsFile = dir + "/care-teams"
        try "\(Self.user) physio-north\n".write(toFile: teamsFile, atomically: true, encoding: .utf8)
        chmod(teamsFile, 0o600)
        let state = dir + "/state"
        let options = ["--publish-series", "false", "--care-teams", teamsFile]
        let rec = try MQTTRecorder(
            url: broker.url,
            filters: ["mobility/v1/users/+/alerts/#", "mobility/v1/teams/#", "mobility/v1/audit", "mobility/v1/rejected"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        var daemon = try DaemonUnderTest(broker: broker, state: state, extra: options)
        let userTopic = alertTopic(Self.user, "stalled_recovery")
        let teamTopic = "mobility/v1/teams/physio-north/users/\(Self.user)/alerts/stalled_recovery"
        let audit = { rec.messages(prefix: "mobility/v1/audit").map(\.text) }

        // Refused, nothing changed, each with its reason.
        let user = "{\"name\":\"user\",\"value\":\"\(Self.user)\"}"
        let cases: [(String, String, String)] = [
            (Self.commands, "{not json", "malformed_json"),
            (Self.commands, Self.add(user, ends: isoNow(days: -1), starts: isoNow(days: 1)), "ends_before_starts"),
            (Self.commands, Self.add(user, ends: isoNow(days: -1), starts: isoNow(days: -2)), "ends_in_past"),
            (Self.commands, Self.add("{\"name\":\"ward\",\"value\":\"a\"}", ends: isoNow(days: 1)), "unknown_label"),
            (Self.commands, Self.add("{\"name\":\"user\",\"value\":\"a{2}\",\"isRegex\":true}", ends: isoNow(days: 1)), "invalid_matcher"),
            (Self.commands, Self.add("{\"name\":\"user\",\"value\":\".*\",\"isRegex\":true}", ends: isoNow(days: 1)), "invalid_matcher"),
            (Self.commands, Self.add(Array(repeating: user, count: 9).joined(separator: ","), ends: isoNow(days: 1)), "too_many_matchers"),
            (Self.commands, Self.add(user, ends: isoNow(days: 100)), "too_long"),
            (Self.commands, Self.add(user, ends: isoNow(days: 1), extra: ",\"colour\":\"red\""), "unknown_field"),
            (Self.commands, Self.add(user, ends: isoNow(days: 1), extra: ",\"x\":\"" + String(repeating: "x", count: 9000) + "\""), "payload_too_large"),
            (Self.commands, "{\"action\":\"mute\"}", "unknown_action"),
            (Self.commands, "{\"action\":\"expire\",\"id\":\"00000000deadbeef\",\"by\":\"kim\"}", "unknown_silence"),
            ("mobility/v1/teams/nobody/commands/silence", Self.add(user, ends: isoNow(days: 1)), "unknown_team")
        ]
        for (topic, payload, _) in cases { try pub.publish(topic, payload) }
        #expect(eventually { rejections(rec) == cases.map(\.2) }, "\(rejections(rec))")
        #expect(daemon.metric("mobilityd_silence_commands_total{result=\"unknown_label\"}") == 1)
        #expect(daemon.metric("mobilityd_silence_commands_total{result=\"ends_before_starts\"}") == 1)
        #expect(daemon.metric("mobilityd_silences{state=\"active\"}") == 0)
        #expect(audit().isEmpty)

        // mobilityctl silence add: prints the id; the daemon publishes it retained and audits it.
        let add = try ctl([
            "silence", "add", "--broker", broker.url, "--team", "physio-north", "user=\(Self.user)", "rule=~stalled_.*",
            "--duration", "2d", "--comment", "in hospital, physio paused", "--author", "nurse.kim"
        ])
        #expect(add.wait() == 0, "\(add.log)")
        let id = try #require(add.log.split(separator: "\n").first { $0.count == 16 }.map(String.init), "\(add.log)")
        let silenceTopic = "mobility/v1/teams/physio-north/silences/\(id)"
        #expect(eventually { rec.messages(prefix: silenceTopic).last?.text.contains("\"state\":\"active\"") == true })
        #expect(eventually { audit().count == 1 })
        #expect(audit().first.map { $0.contains("\"action\":\"silence\"") && $0.contains("\"subject\":\"\(id)\"") } == true, "\(audit())")

        // The whole story, silenced: the firing is published (retained state) marked on both topics;
        // the reminders are evaluated and recorded but not delivered.
        for r in records { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
        #expect(daemon.waitProcessed(records.count, timeout: 90))  // commands are not journalled, not counted
        #expect(daemon.waitIdle())
        #expect(try rec.barrier())
        for topic in [userTopic, teamTopic] {
            let seen = rec.messages(prefix: topic).compactMap { AlertTransition.parse($0.payload) }.filter { $0.id == fired.id }
            #expect(seen.count == 1 && seen[0].status == .firing && !seen[0].isRepeat && seen[0].silencedBy == [id], "\(topic): \(seen.map(\.json))")
        }
        #expect((daemon.metric("mobilityd_alert_reminders_total{rule=\"stalled_recovery\"}") ?? 0) >= 1, "reminders were evaluated")
        #expect((daemon.metric("mobilityd_alert_notifications_silenced_total") ?? 0) >= 1)

        // A restart keeps the silence (mobilityctl silence query lists it), and so does a reload.
        #expect(daemon.process.stop() == 0)
        let store = try StateStore(path: state + "/state.sqlite")
        let recorded = try #require(try store.firingPayload(user: Self.user, alert: fired.id).flatMap { AlertTransition.parse($0) })
        #expect(recorded.isRepeat && recorded.silencedBy == [id], "the withheld reminder is in the history, marked: \(recorded.json)")
        daemon = try DaemonUnderTest(broker: broker, state: state, extra: options)
        #expect(daemon.metric("mobilityd_silences{state=\"active\"}") == 1)
        daemon.process.signal(SIGHUP)
        #expect(eventually { daemon.metric("mobilityd_rule_reloads_total{result=\"success\"}") == 1 })
        #expect(daemon.metric("mobilityd_silences{state=\"active\"}") == 1)
        let query = try ctl(["silence", "query", "--broker", broker.url, "--team", "physio-north"])
        #expect(query.wait() == 0, "\(query.log)")
        #expect(query.log.contains(id) && query.log.contains("active") && query.log.contains("rule=~\"stalled_.*\""), "\(query.log)")

        // Expired by hand: the retained silence is cleared, the expiry audited; the resolution
        // of the tail days is delivered again, unmarked.
        let expire = try ctl(["silence", "expire", "--broker", broker.url, "--team", "physio-north", "--author", "dr.lee", id])
        #expect(expire.wait() == 0, "\(expire.log)")
        #expect(eventually { rec.messages(prefix: silenceTopic).last?.payload.isEmpty == true })
        #expect(eventually { audit().count == 2 && audit()[1].contains("\"action\":\"expire\"") && audit()[1].contains("\"by\":\"dr.lee\"") })
        #expect(eventually { daemon.metric("mobilityd_silences{state=\"active\"}") == 0 })
        for d in 1...12 {
            try pub.publish(samplesTopic(Self.user), sampleJSON(id: "tail-\(d)", value: 1.3, end: String(format: "2026-04-%02dT20:00:00Z", d)))
        }
        #expect(eventually(timeout: 30) { rec.messages(prefix: teamTopic).contains { AlertTransition.parse($0.payload)?.status.isEnded == true } })
        let resolved = try #require(rec.messages(prefix: userTopic).compactMap { AlertTransition.parse($0.payload) }.first { $0.status.isEnded })
        #expect(resolved.id == fired.id && resolved.silencedBy == nil)

        // (Expiry by the clock: SilenceDeskTests, on a clock the test moves.)
        #expect(rejections(rec) == cases.map(\.2), "nothing refused since")
        #expect(daemon.process.stop() == 0)

        // mobilityctl audit lists the silences and their expiries.
        let table = try ctl(["audit", "--state", state])
        #expect(table.wait() == 0)
        #expect(table.log.contains("silence") && table.log.contains("expire") && table.log.contains(id) && table.log.contains("dr.lee"), "\(table.log)")
    }

    @Test func mobilityctlSilenceRefusesWrongArguments() throws {
        let url = "mqtt://127.0.0.1:1"
        for args in [
            ["silence"], ["silence", "mute"], ["silence", "add", "--broker", url, "user=a", "--comment", "c", "--author", "a"],  // no --team
            ["silence", "add", "--broker", url, "--team", "t", "--comment", "c", "--author", "a"],  // no matcher
            ["silence", "add", "--broker", url, "--team", "t", "user", "--comment", "c", "--author", "a"],  // not a matcher
            ["silence", "add", "--broker", url, "--team", "t", "user=~a{2}", "--comment", "c", "--author", "a"],
            ["silence", "add", "--broker", url, "--team", "t", "user=a", "--author", "a"],  // no comment
            ["silence", "add", "--broker", url, "--team", "t", "user=a", "--comment", "c", "--author", "a", "--duration", "2x"],
            ["silence", "add", "--broker", url, "--team", "t", "user=a", "--comment", "c", "--author", "a", "--end", "tomorrow"],
            ["silence", "add", "--broker", url, "--team", "t", "user=a", "--comment", "c", "--author", "a", "--duration", "1h", "--end", isoNow(days: 1)],
            ["silence", "add", "--broker", url, "--team", "t", "user=a", "--comment", "c", "--author", "a", "--end", isoNow(days: -1)],
            ["silence", "expire", "--broker", url, "--team", "t", "--author", "a", "not-an-id"],
            ["silence", "expire", "--broker", url, "--team", "t", "0123456789abcdef"],  // no author
            ["silence", "query", "--broker", url, "--output", "yaml"], ["silence", "query", "--bogus"], ["silence", "query"]
        ] {
            let p = try ctl(args)
            #expect(p.wait() == 2, "\(args): \(p.log)")
            #expect(p.log.contains("mobilityctl silence"), "\(args): \(p.log)")
        }
    }
}
