import Foundation
import Glibc
import MobilityModel
import TestSupport
import Testing

/// Care staff record, correct and retract patients' clinical events and annotations, end to end:
/// a real mosquitto, mobilityd with a care-teams file and team tokens, `mobilityctl event` over
/// MQTT and `POST /api/v1/users/{u}/events` over HTTP; the timeline, the audit trail, the pages
/// and FHIR say who did what; bad input is refused with its reason and changes nothing.
@Suite(.serialized) struct TimelineCommandDaemonTests {
    static let wardA = String(repeating: "a7", count: 20), wardB = String(repeating: "b8", count: 20), reader = String(repeating: "c9", count: 20)

    /// The patient's local date `days` from today (UTC users).
    static func date(_ days: Int) -> String { String(isoNow(days: Double(days)).prefix(10)) }

    struct Ward {
        let dir: String, port: Int, broker: MosquittoBroker, daemon: DaemonUnderTest, rec: MQTTRecorder
        var base: String { "http://127.0.0.1:\(port)" }

        /// `mobilityctl event …` against the test broker; exit code and output.
        func ctl(_ args: [String]) throws -> (Int32, String) {
            let p = try ChildProcess(ChildProcess.product("mobilityctl"), ["event"] + args + ["--broker", broker.url])
            return (p.wait(timeout: 30), p.log)
        }

        func post(_ json: String, user: String = "jamie", token: String = TimelineCommandDaemonTests.wardA) throws -> Curl.Result {
            try Curl.post(base + "/api/v1/users/\(user)/events", json: json, headers: ["Authorization: Bearer \(token)"])
        }

        /// The recorded timeline over HTTP: entry id → the entry's JSON object.
        func timeline(_ user: String = "jamie") throws -> [String: JSONValue] {
            let r = try Curl.get(base + "/api/v1/users/\(user)/events", headers: ["Authorization: Bearer \(TimelineCommandDaemonTests.wardA)"])
            guard r.status == 200, case .success(let v) = JSONValue.parse(r.body), case .array(let events)? = v["data"]?["events"] else { return [:] }
            var out: [String: JSONValue] = [:]
            for e in events { if case .string(let id)? = e["id"] { out[id] = e } }
            return out
        }

        /// The reasons refused on the team topics, in order.
        func refusals() -> [String] {
            rec.messages(prefix: "mobility/v1/teams/").filter { $0.topic.hasSuffix("/commands/rejected") }.compactMap { m in
                if case .success(let v) = JSONValue.parse(m.payload), case .string(let r)? = v["reason"] { r } else { nil }
            }
        }
    }

    static func ward() throws -> Ward {
        let dir = try ReportListenerTests.scratch()
        try "nurse.kim:\(wardA) teams=ward-a write=events\nnurse.bo:\(wardB) teams=ward-b write=events\nreader:\(reader) teams=ward-a\n".write(
            toFile: dir + "/tokens", atomically: true, encoding: .utf8)
        chmod(dir + "/tokens", 0o600)
        try "jamie ward-a\nalex ward-b\n".write(toFile: dir + "/teams", atomically: true, encoding: .utf8)
        chmod(dir + "/teams", 0o600)
        let broker = try MosquittoBroker()
        let port = try freePort()
        let daemon = try DaemonUnderTest(
            broker: broker, state: dir + "/state",
            extra: ["--http-address", "127.0.0.1:\(port)", "--http-tokens", dir + "/tokens", "--care-teams", dir + "/teams"])
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/audit", "mobility/v1/teams/#", "mobility/v1/users/+/rejected"])
        // Ten days of walking for both patients, up to now.
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        for user in ["jamie", "alex"] {
            for k in (0..<10).reversed() {
                try pub.publish(samplesTopic(user), sampleJSON(id: "\(user)-\(k)", value: 1.2 + Double(k) / 100, end: isoNow(days: -Double(k))))
            }
        }
        guard daemon.waitProcessed(20, timeout: 30), daemon.waitIdle() else { throw HarnessError("the samples were not taken:\n\(daemon.process.log)") }
        return Ward(dir: dir, port: port, broker: broker, daemon: daemon, rec: rec)
    }

    @Test func staffEnterCorrectAndRetractAnInjuryOverMQTTAndHTTP() throws {
        let w = try Self.ward()
        defer {
            w.daemon.process.stop()
            try? FileManager.default.removeItem(atPath: w.dir)
        }
        // Recorded from the command line, as nurse.kim of ward-a.
        let (added, addLog) = try w.ctl([
            "add", "--team", "ward-a", "--user", "jamie", "--kind", "injury", "--date", Self.date(-5), "--id", "inj-1", "--note", "fell on the stairs",
            "--by", "nurse.kim"
        ])
        #expect(added == 0, "\(addLog)")
        #expect(addLog.contains("added inj-1 of jamie by nurse.kim at ") && addLog.contains(": injury on \(Self.date(-5))\n"), "\(addLog)")
        var entry = try #require(try w.timeline()["inj-1"], "\(w.daemon.process.log)")
        #expect(entry["first"] == .string(Self.date(-5)) && entry["kind"] == .string("injury") && entry["note"] == .string("fell on the stairs"))
        #expect(entry["entered"]?["by"] == .string("nurse.kim") && entry["entered"]?["team"] == .string("ward-a"))
        // The page shows it, whose it is.
        let panel = try Curl.get(w.base + "/users/jamie/panel", headers: ["Authorization: Bearer \(Self.wardA)"])
        #expect(panel.status == 200 && panel.body.contains("data-entered-by=\"nurse.kim\""), "\(panel.status)")

        // The date was wrong: corrected from the command line.
        let (corrected, correctLog) = try w.ctl([
            "correct", "--team", "ward-a", "--user", "jamie", "--id", "inj-1", "--kind", "injury", "--date", Self.date(-3), "--comment",
            "date from the discharge letter", "--by", "dr.lee"
        ])
        #expect(corrected == 0, "\(correctLog)")
        entry = try #require(try w.timeline()["inj-1"])
        #expect(entry["first"] == .string(Self.date(-3)) && entry["entered"]?["by"] == .string("dr.lee") && entry["note"] == nil)

        // Over HTTP with ward-a's token: an illness added, then the injury retracted.
        let illness = try w.post(
            #"{"action":"add","user":"jamie","entry":{"id":"ill-1","kind":"illness","category":"annotation","start":"\#(Self.date(-2))","end":"\#(Self.date(0))","note":"flu"}}"#
        )
        #expect(illness.status == 200 && illness.body.contains("\"action\":\"add_event\"") && illness.body.contains("\"by\":\"nurse.kim\""), "\(illness.body)")
        let retracted = try w.post(#"{"action":"retract","user":"jamie","by":"nurse.kim","note":"wrong patient","entry":{"id":"inj-1","retracted":true}}"#)
        #expect(retracted.status == 200 && retracted.body.contains("\"detail\":\"retracted injury on \(Self.date(-3))\""), "\(retracted.body)")
        let timeline = try w.timeline()
        #expect(Set(timeline.keys) == ["ill-1"])
        #expect(timeline["ill-1"]?["entered"]?["by"] == .string("nurse.kim") && timeline["ill-1"]?["last"] == .string(Self.date(0)))

        // The audit trail, on the store and on MQTT (the team's copy is each command's answer).
        let audit = try ChildProcess(ChildProcess.product("mobilityctl"), ["audit", "--state", w.daemon.statePath, "--output", "json"])
        #expect(audit.wait() == 0)
        let rows = audit.log.split(separator: "\n").compactMap { try? JSONValue.parse(String($0)).get() }
        #expect(rows.map { $0["action"] } == [.string("add_event"), .string("correct_event"), .string("add_event"), .string("retract_event")], "\(audit.log)")
        #expect(rows.map { $0["by"] } == [.string("nurse.kim"), .string("dr.lee"), .string("nurse.kim"), .string("nurse.kim")])
        #expect(rows.allSatisfy { $0["team"] == .string("ward-a") && $0["user"] == .string("jamie") })
        #expect(
            rows[1]["detail"] == .string("injury on \(Self.date(-3)), was injury on \(Self.date(-5))")
                && rows[1]["note"] == .string("date from the discharge letter"))
        #expect(rows[3]["note"] == .string("wrong patient"))
        #expect(eventually { w.rec.messages(prefix: "mobility/v1/teams/ward-a/audit").count == 4 && w.rec.messages(prefix: "mobility/v1/audit").count == 4 })
        let table = try ChildProcess(ChildProcess.product("mobilityctl"), ["audit", "--state", w.daemon.statePath])
        #expect(table.wait() == 0 && table.log.contains("retract_event") && table.log.contains("dr.lee"), "\(table.log)")

        // FHIR: the illness as an Observation, performed by nurse.kim, valid R4.
        let export = try ChildProcess(ChildProcess.product("mobilityctl"), ["fhir", "export", "--state", w.daemon.statePath, "--user", "jamie"])
        #expect(export.wait() == 0)
        let bundle = String(export.log.split(separator: "\n").first { $0.hasPrefix("{") } ?? "")
        #expect(bundle.contains("\"display\":\"nurse.kim (ward-a)\"") && bundle.contains("urn:mobilitywatch:timeline-entry"), "\(bundle.prefix(400))")
        #expect(!bundle.contains("jamie/inj-1"), "a retracted entry is not exported")
        let verdict = try FHIRValidator.validate([bundle])
        #expect(verdict.valid, "\(verdict.output)")
        #expect(w.daemon.metric("mobilityd_timeline_commands_total{result=\"accepted\"}") == 4)
    }

    /// Each bad command gets its specific reason, over MQTT or HTTP, and changes nothing: the
    /// timeline, the audit trail and the outputs stay as they were.
    @Test func badCommandsAreRefusedWithTheirReasonAndChangeNothing() throws {
        let w = try Self.ward()
        defer {
            w.daemon.process.stop()
            try? FileManager.default.removeItem(atPath: w.dir)
        }
        #expect(
            try w.post(#"{"action":"add","user":"jamie","entry":{"id":"inj-1","kind":"injury","category":"clinical","date":"\#(Self.date(-4))"}}"#).status
                == 200)
        let before = try w.timeline()
        func refused(_ args: [String], _ reason: String, _ message: String) throws {
            let (code, log) = try w.ctl(args)
            #expect(code == 1 && log.contains("refused (\(reason)): \(message)"), "\(args): \(log)")
        }
        let a = ["--team", "ward-a", "--user", "jamie", "--by", "nurse.kim"]
        try refused(["add", "--kind", "sprain", "--date", Self.date(-1), "--id", "x"] + a, "unknown_kind", "unknown kind 'sprain'")
        try refused(["add", "--kind", "fall", "--date", Self.date(400), "--id", "x"] + a, "date_out_of_range", "entry dated \(Self.date(400)) starts after")
        try refused(["add", "--kind", "fall", "--date", "1899-12-31", "--id", "x"] + a, "date_out_of_range", "entry dated 1899-12-31 is outside the years 1900")
        try refused(["add", "--kind", "fall", "--date", Self.date(-1), "--id", "inj-1"] + a, "entry_exists", "the user already holds an entry with this id")
        try refused(["retract", "--id", "nope"] + a, "unknown_entry", "the user holds no timeline entry with this id")
        try refused(
            ["add", "--team", "ward-a", "--user", "jamei", "--kind", "fall", "--date", Self.date(-1), "--by", "nurse.kim"], "unknown_user",
            "team ward-a has no patient with this id")
        try refused(["correct", "--id", "nope", "--kind", "injury", "--date", Self.date(-1)] + a, "unknown_entry", "the user holds no timeline entry")
        // Ward-b's staff on their own command topic (the broker here has no ACL) for ward-a's patient.
        try refused(
            ["correct", "--team", "ward-b", "--user", "jamie", "--id", "inj-1", "--kind", "injury", "--date", Self.date(-1), "--by", "nurse.bo"],
            "unknown_user", "team ward-b has no patient with this id")
        try refused(
            ["retract", "--team", "ward-b", "--user", "jamie", "--id", "inj-1", "--by", "nurse.bo"], "unknown_user", "team ward-b has no patient with this id")
        // Control characters in a note: the command line refuses it itself (exit 2); sent raw, the daemon does.
        let (local, localLog) = try w.ctl(["add", "--kind", "fall", "--date", Self.date(-1), "--note", "a\u{1b}[2Jb"] + a)
        #expect(local == 2 && localLog.contains("[invalid_text]"), "\(localLog)")
        let pub = try MQTTRecorder(url: w.broker.url, filters: [])
        try pub.publish(
            "mobility/v1/teams/ward-a/commands/event",
            #"{"action":"add","user":"jamie","by":"nurse.kim","entry":{"id":"n","kind":"note","category":"annotation","date":"\#(Self.date(-1))","note":"a\u0007b"}}"#
        )
        try pub.publish(
            "mobility/v1/teams/ward-a/commands/event",
            #"{"action":"add","user":"jamie","entry":{"id":"n","kind":"note","category":"annotation","date":"\#(Self.date(-1))"}}"#)
        try pub.publish("mobility/v1/teams/ward-a/commands/event", "{not json")
        #expect(
            eventually {
                w.refusals() == [
                    "unknown_kind", "date_out_of_range", "date_out_of_range", "entry_exists", "unknown_entry", "unknown_user", "unknown_entry",
                    "unknown_user", "unknown_user", "invalid_text", "missing_field", "malformed_json"
                ]
            }, "\(w.refusals())")
        // Over HTTP: another ward's token sees no such patient; each refusal names its reason.
        func status(_ r: Curl.Result) -> (Int, JSONValue?) {
            (r.status, (try? JSONValue.parse(r.body).get())?["reason"])
        }
        let retract = #"{"action":"retract","user":"jamie","entry":{"id":"inj-1","retracted":true}}"#
        #expect(try w.post(retract, token: Self.wardB).status == 404)
        #expect(try w.post(retract, token: Self.reader).status == 403, "a token that only reads")
        #expect(
            status(try w.post(#"{"action":"add","user":"jamie","entry":{"id":"inj-1","kind":"fall","category":"clinical","date":"\#(Self.date(-1))"}}"#)) == (
                409, .string("entry_exists")
            ))
        #expect(status(try w.post(#"{"action":"retract","user":"jamie","entry":{"id":"nope","retracted":true}}"#)) == (404, .string("unknown_entry")))
        #expect(status(try w.post(#"{"action":"retract","user":"alex","entry":{"id":"inj-1","retracted":true}}"#)) == (400, .string("invalid_field")))
        #expect(
            status(try w.post(#"{"action":"retract","user":"jamie","by":"dr.who","entry":{"id":"inj-1","retracted":true}}"#)) == (400, .string("invalid_field"))
        )
        #expect(
            status(try w.post(#"{"action":"add","user":"jamie","entry":{"id":"x","kind":"sprain","category":"clinical","date":"\#(Self.date(-1))"}}"#)) == (
                400, .string("unknown_kind")
            ))
        #expect(
            status(
                try w.post(
                    #"{"action":"add","user":"jamie","entry":{"id":"x","kind":"note","category":"annotation","date":"\#(Self.date(-1))","note":"a\u0000b"}}"#))
                == (400, .string("invalid_text")))
        #expect(
            try Curl.post(
                w.base + "/api/v1/users/jamie/events", body: Array(retract.utf8), contentType: "text/plain", headers: ["Authorization: Bearer \(Self.wardA)"]
            ).status == 415)

        // Nothing changed: the timeline, the audit trail (one row: the first add).
        #expect(w.daemon.waitIdle())
        #expect(try w.timeline() == before)
        #expect(w.rec.messages(prefix: "mobility/v1/audit").count == 1)
        #expect(w.rec.messages(prefix: "mobility/v1/users/jamie/rejected").isEmpty, "a staff refusal is not the gateway's")
        #expect(w.daemon.metric("mobilityd_timeline_commands_total{result=\"accepted\"}") == 1)
        #expect(w.daemon.metric("mobilityd_timeline_commands_total{result=\"unknown_user\"}") == 3)
    }
}
