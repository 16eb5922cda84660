import Foundation
import RuleEngine
import RuleLanguage
import RuleTesting

/// `mobilityctl`: rules (`check`, `test`), recorded traffic (`replay`, `report`), care staff's
/// commands and views over the broker (`alerts`, `ack`, `silence`, `event`) and a state directory
/// (`audit`, `fhir export`); `usage` below is the full list. Exit codes like promtool: 0 ok,
/// 1 failures, 2 usage error; `replay`: 3 when traffic lines were malformed.
let usage = """
    usage: mobilityctl <command> [options]

    commands:
      check FILE|DIR...                 parse and check rule files; print all diagnostics
      test [--rules-root DIR]... FILE|DIR...
                                        run rule unit tests (*.test files); a test's rule paths must
                                        lie under the directory above it, or under a --rules-root
      replay --rules DIR [--series] [--grace SECONDS] [--lateness DAYS] [--verbose] [--no-final-close] [--threads N] FILE
                                        feed recorded traffic (JSON lines of {"topic","payload"})
                                        through the engine; print alert transitions as JSON lines;
                                        on stderr a summary (lines, malformed, rejections by reason),
                                        with --verbose each rejection. At the end of the file each
                                        user's days are closed through their last day of data
                                        (--no-final-close: leave them open). Exit 3 when lines
                                        were malformed (the rest was replayed). Users are shared
                                        out over N threads (default: the cores); the output is the
                                        same bytes for any N
      report (--rules DIR --traffic FILE | --state DIR [--rules DIR]) --user USER [--week 2026-W10]
             [--page weekly|panel] [--format json|html] -o OUT|-
                                        the user's weekly care-team digest (JSON) or a page (HTML:
                                        the weekly report, or the recovery panel), from recorded
                                        traffic (or mobility-sim export's output) or from a
                                        mobilityd state directory; mode 0600, '-': stdout; the week
                                        defaults to the last complete one (the stored latest);
                                        several --user or --all-users with -o DIR: a file a user
                                        (DIR/USER.PAGE.FORMAT), the traffic read once
      alerts [--broker URL] [--credentials FILE [--account NAME]] [--ca-file FILE]
             [--cert-file FILE --key-file FILE] [--mqtt-version 3.1.1|5] [--topic-root ROOT]
             [--team TEAM] [--user USER] [--rule RULE] [--severity info|warning|critical]
             [--follow] [--output table|json]
                                        what is firing now, from the retained alert topics (with
                                        --team: the team's topics), as a table sorted by severity,
                                        rule and user, with the id ack takes and who acknowledged or
                                        silenced each; --follow: then what happens (fired, reminder,
                                        acknowledged, silenced, resolved…), one line each, until
                                        Ctrl-C; --output json: the payloads as published, one a line.
                                        Exit 1 when the broker cannot be reached, refuses the login,
                                        or the team is unknown or not readable by the account
      ack --broker URL --team T --user U --alert ID [--by NAME] [--note TEXT] [--wait SECONDS]
          [--credentials FILE --account NAME] [--ca-file F] [--cert-file F --key-file F]
          [--mqtt-version 3.1.1|5] [--topic-root ROOT]
                                        acknowledge a firing alert instance: publish the command on
                                        {root}/teams/T/commands/ack and wait (default 10 s; 0: only
                                        for the broker) for mobilityd's answer: the acknowledged alert
                                        (exit 0) or its refusal with the reason (exit 1). Account
                                        default care-dashboard; MQTT 5 by default, so that a publish
                                        the ACL refuses fails with exit 1. Without --by (or with --by
                                        the --account login) ack, silence and event publish on
                                        {root}/teams/T/commands/KIND/LOGIN: the login is who acts
      silence add --team T MATCHER... [--duration 2h | --end ISO] [--start ISO] --comment TEXT --author NAME
      silence query [--team T] [--output table|json]
      silence expire --team T --author NAME ID...
          (each with --broker URL and the broker options of ack)
                                        like amtool silence: add prints the new silence's id
                                        (MATCHER: name=value, name!=value, name=~regex, name!~regex;
                                        name: user, rule, severity or a rule label; default 1h);
                                        query lists the team's (or every team's) silences from the
                                        retained {root}/teams/T/silences/+; expire ends them now;
                                        add and expire wait for mobilityd's answer (--wait SECONDS,
                                        default 10): exit 1 with the reason when it refuses
      event add|correct|retract --team T --user U [--id ID] [--kind KIND (--date D | --start D --end D)]
            [--category clinical|annotation] [--note TEXT] [--comment WHY] --by NAME (the broker options of ack)
                                        record a clinical event or an annotation on a patient's timeline
                                        (an injury, a fall, an illness, a note), correct its date, kind or
                                        note, or retract it: publish the command on
                                        {root}/teams/T/commands/event and wait for mobilityd's answer (the
                                        audit entry on {root}/teams/T/audit: exit 0; add prints the id) or
                                        its refusal with the reason (exit 1); `event --help` for more
      audit --state DIR [--output table|json]
                                        list the audit trail (acknowledgements, silences, expiries,
                                        timeline entries added, corrected, retracted) of the daemon's store
      fhir export --state DIR [--rules DIR] [--user USER] [--from YYYY-MM-DD] [--to YYYY-MM-DD] [-o FILE|-]
                                        the state's history as a FHIR R4 Bundle (collection): a Flag
                                        per alert instance, an Observation per series value
                                        (docs/fhir.md); mode 0600, default '-': stdout
      export --state DIR [--team TEAM] [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--format csv] [-o FILE|-]
                                        research data: one CSV row per user-day, every series with
                                        the clinical events and annotations of the day
                                        (docs/research-export.md); the store is read, never written.
                                        --team: the users whose stored profile names the team (as
                                        mobilityd last saved it; its --care-teams file is not read)
      help [COMMAND]                    show this help, or a command's (as COMMAND --help does)
    """

func fail(_ msg: String) -> Never {
    FileHandle.standardError.write(Data((msg + "\n").utf8))
    exit(2)
}

/// The usage of one command: its own text, else its lines of ``usage``; nil for an unknown command.
func commandUsage(_ command: String) -> String? {
    switch command {
    case "alerts": return AlertsCommand.usage
    case "silence": return SilenceCommandLine.usage
    case "event": return EventCommandLine.usage
    case "report": return ReportCommand.usage
    case "fhir": return FHIRCommand.usage
    case "help", "-h", "--help": return usage
    default:
        let lines = usage.split(separator: "\n", omittingEmptySubsequences: false)
        guard let first = lines.firstIndex(where: { $0.hasPrefix("  \(command) ") }) else { return nil }
        var block = [lines[first].dropFirst(2)]
        for line in lines[(first + 1)...] {
            guard line.hasPrefix("   ") else { break }
            block.append(line.dropFirst(2))
        }
        return "usage: mobilityctl " + block.joined(separator: "\n")
    }
}

var args = Array(CommandLine.arguments.dropFirst())
guard let command = args.first else { fail(usage) }
args.removeFirst()
let colour = isatty(2) == 1 && ProcessInfo.processInfo.environment["NO_COLOR"] == nil

/// The options of mobilityctl's commands that take no value: any other option's next argument
/// is its value, even one spelled `-h` or `--help` (a comment or note may say anything).
let flagsWithoutValue: Set<String> = ["--series", "--verbose", "-v", "--no-final-close", "--all-users", "--follow", "-f", "-h", "--help"]

/// Whether `args` ask for help: `--help` or `-h` as an argument of its own, not an option's value.
func asksForHelp(_ args: [String]) -> Bool {
    args.indices.contains { i in
        ["-h", "--help"].contains(args[i]) && (i == 0 || !args[i - 1].hasPrefix("-") || flagsWithoutValue.contains(args[i - 1]))
    }
}

// `--help` or `-h` anywhere after a command (not as an option's value): that command's usage, on
// stdout, exit 0.
if asksForHelp(args), let text = commandUsage(command) {
    print(text)
    exit(0)
}

switch command {
case "check":
    if let option = args.first(where: { $0.hasPrefix("-") }) {
        fail("mobilityctl check: unknown option '\(option)' (check takes rule files and directories)\n\n" + (commandUsage("check") ?? usage))
    }
    guard !args.isEmpty else { fail("mobilityctl check: name at least one rule file or directory\n\n" + usage) }
    exit(CheckCommand.run(paths: args, colour: colour))
case "test":
    guard !args.isEmpty else { fail("mobilityctl test: name at least one test file or directory\n\n" + usage) }
    exit(TestCommand.run(args, colour: colour))
case "replay":
    exit(ReplayCommand.run(args))
case "report":
    exit(ReportCommand.run(args))
case "ack":
    exit(AckCommandLine.run(args))
case "audit":
    exit(AuditCommandLine.run(args))
case "silence":
    exit(SilenceCommandLine.run(args))
case "event":
    exit(EventCommandLine.run(args))
case "alerts":
    exit(AlertsCommand.run(args))
case "fhir":
    exit(FHIRCommand.run(args))
case "export":
    exit(ExportCommand.run(args))
case "help", "-h", "--help":
    // `help COMMAND`: that command's usage.
    guard let topic = args.first else {
        print(usage)
        exit(0)
    }
    guard args.count == 1, let text = commandUsage(topic) else { fail("mobilityctl help: unknown command '\(args.joined(separator: " "))'\n\n" + usage) }
    print(text)
    exit(0)
default:
    fail("mobilityctl: unknown command '\(command)'\n\n" + usage)
}
