import Foundation
import MQTTTransport
import MobilityModel
import StateStore

/// `mobilityctl ack`: publishes an acknowledgement command on the team's command topic and
/// waits for the daemon's answer: the alert republished with the acknowledgement (on the user's
/// or the team's alert topic: exit 0), or a refusal on `{root}/teams/{team}/commands/rejected`
/// (exit 1, with the reason); `--wait 0` only waits for the broker.
enum AckCommandLine {
    static func run(_ args: [String]) -> Int32 {
        var team: String?, user: String?, alert: String?, by: String?, note: String?
        var options = CommandBroker()
        var i = 0
        func value() -> String {
            i += 1
            guard i < args.count else { fail("mobilityctl ack: \(args[i - 1]) needs a value") }
            return args[i]
        }
        while i < args.count {
            switch args[i] {
            case "--team": team = value()
            case "--user": user = value()
            case "--alert": alert = value()
            case "--by": by = value()
            case "--note": note = value()
            case let flag where options.take(flag, command: "ack", value: value): break
            default: fail("mobilityctl ack: unknown option '\(args[i])'\n\n" + usage)
            }
            i += 1
        }
        guard options.broker != nil, let team, let user, let alert, let by = options.actor(by) else {
            fail("mobilityctl ack: --broker, --team, --user, --alert and --by (or --account) are required\n\n" + usage)
        }
        // The same bounds the daemon applies, so that a typo is told here and not on the rejected topic.
        guard isID(team) else { fail("mobilityctl ack: --team is 1-64 of A-Z a-z 0-9 _ -") }
        guard isID(user) else { fail("mobilityctl ack: --user is 1-64 of A-Z a-z 0-9 _ -") }
        guard !alert.isEmpty, alert.utf8.count <= 64, alert.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }) else {
            fail("mobilityctl ack: --alert is an alert instance id (the 'id' of the firing message: lower-case hex)")
        }
        if let p = StaffText.problem(by, field: "--by", maxBytes: AlertAcknowledgement.maxByBytes, required: true) { fail("mobilityctl ack: \(p)") }
        if let note, let p = StaffText.problem(note, field: "--note", maxBytes: AlertAcknowledgement.maxNoteBytes, required: false) {
            fail("mobilityctl ack: \(p)")
        }
        let access = options.access("ack")
        var w = JSONWriter()
        w.beginObject()
        w.string("alert", alert)
        w.string("user", user)
        w.string("by", by)
        if let note { w.string("note", note) }
        w.endObject()
        let topic = options.commandTopic(team: team, "ack", by: by), rejected = options.rejectedTopic(team: team)
        // The team's copy (what staff may read) or the user's topic (what a dashboard reads).
        let listen = [rejected, "\(options.root)/teams/\(team)/users/\(user)/alerts/+", "\(options.root)/users/\(user)/alerts/+"]
        let outcome = options.send(access, what: "ack", topic: topic, payload: w.bytes, listen: listen) { t, p in
            if t == rejected { return CommandAnswer.refusal(p, command: "ack", key: "alert", value: alert) }
            guard let a = AlertTransition.parse(p), a.id == alert, let ack = a.acknowledged else { return nil }
            return .accepted("\(a.rule) of \(a.user) (\(alert)) acknowledged by \(ack.by) at \(ack.at)")
        }
        switch outcome {
        case .accepted(let text): print(text)
        case .sent: print("acknowledgement of \(alert) sent to \(topic) (not waiting for the daemon's answer)")
        case .failed(let status): return status
        }
        return 0
    }

    static func isID(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 64
            && s.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || $0 == 45 || $0 == 95 }
    }
}

/// `mobilityctl audit --state DIR [--output table|json]`: the audit trail the daemon stored,
/// every stored text escaped for the terminal (``TerminalText``).
enum AuditCommandLine {
    static func run(_ args: [String]) -> Int32 {
        var state: String?, output = "table"
        var i = 0
        while i < args.count {
            switch args[i] {
            case "--state", "--output":
                guard i + 1 < args.count else { fail("mobilityctl audit: \(args[i]) needs a value") }
                if args[i] == "--state" { state = args[i + 1] } else { output = args[i + 1] }
                i += 2
            default: fail("mobilityctl audit: unknown option '\(args[i])'\n\n" + usage)
            }
        }
        guard let state else { fail("mobilityctl audit: --state DIR is required (the daemon's --state)\n\n" + usage) }
        guard output == "table" || output == "json" else { fail("mobilityctl audit: --output is table or json") }
        let path = state + "/state.sqlite"
        guard FileManager.default.fileExists(atPath: path) else { writeErr("mobilityctl audit: no state store at \(path)\n"); return 1 }
        let rows: [AuditEntry]
        do { rows = try StateStore(path: path, readOnly: true).auditTrail() } catch { writeErr("mobilityctl audit: cannot read \(path): \(error)\n"); return 1 }
        if output == "json" {
            for r in rows { print(TerminalText.json(r.json)) }
            return 0
        }
        let header = ["SEQ", "AT", "ACTION", "BY", "TEAM", "USER", "RULE", "SUBJECT", "NOTE", "DETAIL"]
        let table =
            [header]
            + rows.map {
                // Stored text, possibly from before control characters were refused: escaped.
                [String($0.seq), $0.at.description, $0.action, $0.actor, $0.team, $0.user, $0.rule, $0.subject, $0.note ?? "", $0.detail ?? ""]
                    .map(TerminalText.escaped)
            }
        let widths = header.indices.map { c in table.map { $0[c].count }.max() ?? 0 }
        for row in table {
            print(
                row.indices.map { c in c == row.count - 1 ? row[c] : row[c].padding(toLength: widths[c], withPad: " ", startingAt: 0) }.joined(separator: "  "))
        }
        return 0
    }
}
