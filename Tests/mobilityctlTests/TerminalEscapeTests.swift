import Foundation
import Glibc
import MobilityModel
import StateStore
import TestSupport
import Testing

/// What `mobilityctl` prints of stored or published text never reaches the terminal as control
/// characters: a note, comment or name holding escape sequences (stored before they were refused,
/// or sent by anything else) is printed with them escaped, by `audit`, `silence query`, `alerts`
/// (table, `--follow`, JSON lines) and the daemon's answers to `ack`, `silence` and `event`.
@Suite(.serialized) struct TerminalEscapeTests {
    /// A screen clear and a window-title rewrite (ESC), a colour through the one-byte C1 CSI, a
    /// right-to-left override.
    static let hostile = "ok\u{1b}[2J\u{1b}]0;owned\u{07}\u{9b}31m\u{202e}evil"
    static let exe = ChildProcess.product("mobilityctl")

    /// The characters a terminal acts on, other than the line ends between printed lines.
    static func raw(_ s: String) -> [String] {
        s.unicodeScalars.filter {
            ($0.value < 0x20 && $0 != "\n") || (0x7f...0x9f).contains($0.value) || (0x202a...0x202e).contains($0.value)
                || (0x2066...0x2069).contains($0.value)
        }.map { String(format: "U+%04X", $0.value) }
    }

    static func run(_ args: [String]) throws -> (Int32, String) {
        let p = try ChildProcess(exe, args)
        return (p.wait(timeout: 30), p.log)
    }

    @Test func auditPrintsAStoredNoteEscaped() throws {
        let dir = TemporaryPath.make("mw-audit")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let store = try StateStore(path: dir + "/state.sqlite")
            let at = Timestamp(seconds: 1_772_600_000)
            let ack = AlertAcknowledgement(by: "kim\u{9b}1m", at: at, note: Self.hostile)
            _ = try store.recordAcknowledgement(
                StoredAcknowledgement(alert: "4f1c2e9a0b7d3e21", user: "jamie", rule: "stalled_recovery", team: "ward-a", acknowledgement: ack, payload: []),
                audit: AuditEntry(
                    at: at, action: "acknowledge", actor: ack.by, team: "ward-a", user: "jamie", rule: "stalled_recovery", subject: "4f1c2e9a0b7d3e21",
                    note: Self.hostile)
            ) { _ in [] }
        }
        let (status, table) = try Self.run(["audit", "--state", dir])
        #expect(status == 0, "\(table)")
        #expect(Self.raw(table).isEmpty, "\(Self.raw(table)) in \(table.debugDescription)")
        #expect(table.contains(#"ok\x1b[2J\x1b]0;owned\x07\x9b31m\u{202e}evil"#) && table.contains(#"kim\x9b1m"#), "\(table)")
        #expect(table.split(separator: "\n").count == 2, "one header, one row: \(table)")
        let (jsonStatus, json) = try Self.run(["audit", "--state", dir, "--output", "json"])
        #expect(jsonStatus == 0, "\(json)")
        #expect(Self.raw(json).isEmpty, "\(Self.raw(json)) in \(json.debugDescription)")
        // The same JSON value: the escapes decode to the stored note.
        let line = try #require(json.split(separator: "\n").first)
        guard case .success(let v) = JSONValue.parse(Array(line.utf8)), case .string(let note)? = v["note"] else {
            Issue.record("not JSON: \(line)")
            return
        }
        #expect(note == Self.hostile)
    }

    @Test func silenceQueryAndAlertsPrintRetainedTextEscaped() throws {
        let broker = try MosquittoBroker()
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        func escaped(_ s: String) -> String {
            var w = JSONWriter()
            w.beginArray()
            w.string(nil, s)
            w.endArray()
            return String(w.text.dropFirst().dropLast())
        }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let starts = Timestamp(milliseconds: now - 86_400_000), ends = Timestamp(milliseconds: now + 86_400_000)
        let silence = #"""
            {"id":"4f1c2e9a0b7d3e21","team":"ward-a","status":{"state":"active"},"matchers":[{"name":"user","value":"jamie","isRegex":false,"isEqual":true}],\#
            "startsAt":"\#(starts)","endsAt":"\#(ends)","createdBy":\#(escaped("kim\u{9b}1m")),"comment":\#(escaped(Self.hostile))}
            """#
        #expect(try pub.publishAwaitingAnswer("mobility/v1/teams/ward-a/silences/4f1c2e9a0b7d3e21", silence, retain: true) == 0)
        var alert = AlertTransition(
            id: "59f7c533b9e1b77d", rule: "stalled_recovery", user: "jamie", severity: .warning, status: .firing,
            activeSince: Timestamp(seconds: 1_772_524_800), firedAt: Timestamp(seconds: 1_772_528_400), resolvedAt: nil,
            day: CivilDate(year: 2026, month: 3, day: 5), headline: "stalled\u{9b}2J" + Self.hostile, labels: [], evidence: [], annotations: [])
        alert.acknowledged = AlertAcknowledgement(by: "kim\u{9b}1m" + Self.hostile, at: Timestamp(seconds: 1_772_600_000), note: Self.hostile)
        // As published, the payload holds C1 and the override raw (JSON needs no escape for them).
        #expect(alert.json.unicodeScalars.contains("\u{9b}"))
        #expect(try pub.publishAwaitingAnswer("mobility/v1/users/jamie/alerts/stalled_recovery", alert.json, retain: true) == 0)

        for args in [["silence", "query", "--team", "ward-a"], ["silence", "query", "--team", "ward-a", "--output", "json"]] {
            let (status, out) = try Self.run(args + ["--broker", broker.url])
            #expect(status == 0, "\(args): \(out)")
            #expect(Self.raw(out).isEmpty, "\(args): \(Self.raw(out)) in \(out.debugDescription)")
            #expect(out.contains("4f1c2e9a0b7d3e21") && out.contains("evil"), "\(args): \(out)")
        }
        for args in [["alerts"], ["alerts", "--output", "json"]] {
            let (status, out) = try Self.run(args + ["--broker", broker.url])
            #expect(status == 0, "\(args): \(out)")
            #expect(Self.raw(out).isEmpty, "\(args): \(Self.raw(out)) in \(out.debugDescription)")
            #expect(out.contains("jamie") && out.contains("evil"), "\(args): \(out)")
        }
    }

    @Test func theDaemonsAnswerIsPrintedEscaped() throws {
        let broker = try MosquittoBroker()
        // Plays the daemon: answers each acknowledgement command with a refusal quoting escapes.
        let daemon = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/teams/ward-a/commands/ack"])
        let ctl = try ChildProcess(
            Self.exe,
            ["ack", "--broker", broker.url, "--team", "ward-a", "--user", "jamie", "--alert", "4f1c2e9a0b7d3e21", "--by", "kim", "--wait", "20"])
        #expect(eventually(timeout: 20) { !daemon.messages().isEmpty })
        var w = JSONWriter()
        w.beginObject()
        w.string("command", "ack")
        w.string("reason", "unknown_alert\u{1b}[8m")
        w.string("message", Self.hostile)
        w.string("alert", "4f1c2e9a0b7d3e21")
        w.endObject()
        try daemon.publish("mobility/v1/teams/ward-a/commands/rejected", w.text)
        #expect(ctl.wait(timeout: 30) == 1, "\(ctl.log)")
        #expect(Self.raw(ctl.log).isEmpty, "\(Self.raw(ctl.log)) in \(ctl.log.debugDescription)")
        #expect(ctl.log.contains(#"refused (unknown_alert\x1b[8m): ok\x1b[2J"#), "\(ctl.log)")
    }
}
