import Foundation
import MobilityModel
import MobilityWire

/// `mobilityctl event add|correct|retract`: records a clinical event (injury, fall, surgery…) or
/// an annotation (illness, pain, a note…) on a patient's timeline, corrects one, or retracts one,
/// as a member of a care team. Publishes a ``TimelineCommand`` on
/// `{root}/teams/{team}/commands/event` and waits for mobilityd's answer: the audit entry of the
/// committed change on the team's `{root}/teams/{team}/audit` (exit 0), or the refusal with its
/// reason on the team's `commands/rejected` (exit 1). Same broker options as `mobilityctl ack`.
enum EventCommandLine {
    static let usage = """
        usage: mobilityctl event add     --team T --user U --kind KIND (--date D | --start D --end D) [--id ID]
                                         [--category clinical|annotation] [--note TEXT] [--comment WHY] --by NAME BROKER-OPTIONS
               mobilityctl event correct --team T --user U --id ID --kind KIND (--date D | --start D --end D)
                                         [--category clinical|annotation] [--note TEXT] [--comment WHY] --by NAME BROKER-OPTIONS
               mobilityctl event retract --team T --user U --id ID [--comment WHY] --by NAME BROKER-OPTIONS
          KIND: a clinical event (injury, surgery, fall, discharge, hospital_admission, treatment_start) or an
                annotation (pain, fatigue, heat_wave, cold_spell, illness, exercise_plan_change, travel, new_device,
                note), or a kind the rules declare (then give --category); D: the patient's local date, YYYY-MM-DD
          add prints the entry's id (default: entry- and 16 hex digits); --note is kept with the entry, --comment goes to
          the audit trail; the answer is the audit entry on {root}/teams/T/audit
          BROKER-OPTIONS: \(CommandBroker.usage.replacingOccurrences(of: "\n", with: "\n                          "))
        """

    static func run(_ args: [String]) -> Int32 {
        guard let sub = args.first, let action = TimelineCommand.Action(rawValue: sub) else {
            if args.first == "--help" || args.first == "-h" { print(usage); return 0 }
            let got = args.first.map { "unknown subcommand '\($0.prefix(40))'; " } ?? ""
            fail("mobilityctl event: \(got)expected add, correct or retract\n\n" + usage)
        }
        var team: String?, user: String?, id: String?, kind: String?, category: String?, date: String?, start: String?, end: String?
        var note: String?, comment: String?, by: String?
        var options = CommandBroker()
        let rest = Array(args.dropFirst())
        var i = 0
        func value() -> String {
            i += 1
            guard i < rest.count else { fail("mobilityctl event \(sub): \(rest[i - 1]) needs a value\n\n" + usage) }
            return rest[i]
        }
        while i < rest.count {
            switch rest[i] {
            case "--team": team = value()
            case "--user": user = value()
            case "--id": id = value()
            case "--kind": kind = value()
            case "--category": category = value()
            case "--date": date = value()
            case "--start": start = value()
            case "--end": end = value()
            case "--note": note = value()
            case "--comment": comment = value()
            case "--by": by = value()
            case "-h", "--help": print(usage); return 0
            case let flag where options.take(flag, command: "event \(sub)", value: value): break
            default: fail("mobilityctl event \(sub): unknown option '\(rest[i])'\n\n" + usage)
            }
            i += 1
        }
        func usageError(_ m: String) -> Never { fail("mobilityctl event \(sub): \(m)\n\n" + usage) }
        guard options.broker != nil else { usageError("--broker is required") }
        guard let team, AckCommandLine.isID(team) else { usageError("--team is required: 1-64 of A-Z a-z 0-9 _ -") }
        guard let user else { usageError("--user is required (the patient)") }
        guard let by = options.actor(by) else { usageError("--by NAME is required (who enters it), unless --account names the login who does") }
        let change: TimelineChange
        if action == .retract {
            guard let id else { usageError("--id is required (the entry to retract)") }
            guard kind == nil, category == nil, date == nil, start == nil, end == nil, note == nil else {
                usageError("a retraction takes --id only (and --comment)")
            }
            change = .retract(id: id)
        } else {
            guard let kind else { usageError("--kind is required") }
            if action == .correct, id == nil { usageError("--id is required (the entry to correct)") }
            func day(_ text: String, _ flag: String) -> DayNumber {
                guard let d = CivilDate(parsing: Substring(text)), d.description == text else {
                    usageError("\(flag) '\(text)' is not a date such as 2026-03-05")
                }
                return d.dayNumber
            }
            let first: DayNumber, last: DayNumber
            switch (date, start, end) {
            case (let d?, nil, nil): (first, last) = (day(d, "--date"), day(d, "--date"))
            case (nil, let s?, let e?): (first, last) = (day(s, "--start"), day(e, "--end"))
            default: usageError("give --date D, or --start D and --end D")
            }
            let cat: EventCategory
            switch category {
            case nil: cat = TimelineEvent.clinicalKinds.contains(kind) ? .clinical : .annotation
            case "clinical": cat = .clinical
            case "annotation": cat = .annotation
            default: usageError("--category is clinical or annotation")
            }
            let entryID = id ?? TimelineEvent.newID()
            change = .record(TimelineEvent(id: entryID, category: cat, kind: kind, firstDay: first, lastDay: last, note: note))
        }
        let command = TimelineCommand(action: action, user: user, by: by, change: change, note: comment)
        // The daemon's own parser: a command it would refuse for its form is refused here, with its words.
        if case .failure(let r) = TimelineCommand.parse(command.json) { usageError("\(r.message) [\(r.reason)]") }

        let access = options.access("event \(sub)")
        let topic = options.commandTopic(team: team, "event", by: by), rejected = options.rejectedTopic(team: team)
        let audit = "\(options.root)/teams/\(team)/audit", entryID = change.id, expected = action.rawValue + "_event"
        let outcome = options.send(access, what: "event \(sub)", topic: topic, payload: command.json, listen: [rejected, audit]) { t, p in
            if t == rejected { return CommandAnswer.refusal(p, command: "event", key: "id", value: entryID) }
            guard case .success(let v) = JSONValue.parse(p), case .string(entryID)? = v["subject"], case .string(user)? = v["user"],
                case .string(expected)? = v["action"], case .string(let who)? = v["by"], case .string(let at)? = v["at"]
            else { return nil }
            var detail: Substring = if case .string(let d)? = v["detail"] { Substring(d) } else { "" }
            if detail.hasPrefix("retracted ") { detail = detail.dropFirst("retracted ".count) }
            let verb = action == .add ? "added" : action == .correct ? "corrected" : "retracted"
            return .accepted("\(verb) \(entryID) of \(user) by \(who) at \(at)" + (detail.isEmpty ? "" : ": \(detail)"))
        }
        switch outcome {
        case .accepted(let text):
            if action == .add { print(entryID) }
            writeErr("mobilityctl event \(sub): \(text)\n")
        case .sent:
            if action == .add { print(entryID) }
            writeErr("mobilityctl event \(sub): sent to \(topic) (not waiting for the daemon's answer)\n")
        case .failed(let status): return status
        }
        return 0
    }
}
