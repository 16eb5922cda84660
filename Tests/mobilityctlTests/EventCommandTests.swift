import Foundation
import TestSupport
import Testing

/// `mobilityctl event add|correct|retract`'s arguments: each mistake is a usage error (exit 2) that
/// says what is wrong, before anything is sent; the form of a command is checked by the daemon's
/// own parser, with its reason.
@Suite struct EventCommandTests {
    static let broker = ["--broker", "mqtt://127.0.0.1:1"]
    static let who = ["--team", "ward-a", "--user", "jamie", "--by", "nurse.kim"] + broker

    @Test(arguments: [
        ([], "expected add, correct or retract"),
        (["amend"], "expected add, correct or retract"),
        (["add", "--kind", "injury", "--date", "2026-02-01", "--team", "ward-a", "--user", "jamie", "--by", "k"], "--broker is required"),
        (["add", "--kind", "injury", "--date", "2026-02-01", "--user", "jamie", "--by", "k"] + broker, "--team is required"),
        (["add", "--kind", "injury", "--date", "2026-02-01", "--team", "ward/a", "--user", "jamie", "--by", "k"] + broker, "--team is required"),
        (["add", "--kind", "injury", "--date", "2026-02-01", "--team", "ward-a", "--by", "k"] + broker, "--user is required"),
        (["add", "--kind", "injury", "--date", "2026-02-01", "--team", "ward-a", "--user", "jamie"] + broker, "--by NAME is required"),
        (["add", "--date", "2026-02-01"] + who, "--kind is required"),
        (["add", "--kind", "injury"] + who, "give --date D, or --start D and --end D"),
        (["add", "--kind", "injury", "--date", "2026-2-1"] + who, "--date '2026-2-1' is not a date"),
        (["add", "--kind", "illness", "--start", "2026-02-01"] + who, "give --date D, or --start D and --end D"),
        (["add", "--kind", "illness", "--start", "2026-02-05", "--end", "2026-02-01"] + who, "'end' is before 'start' [end_before_start]"),
        (["add", "--kind", "Injury", "--date", "2026-02-01"] + who, "field 'kind' must be a lower_snake_case name [invalid_field]"),
        (["add", "--kind", "injury", "--date", "2026-02-01", "--category", "event"] + who, "--category is clinical or annotation"),
        (["add", "--kind", "injury", "--date", "2026-02-01", "--note", "a\u{7}b"] + who, "[invalid_text]"),
        (["add", "--kind", "injury", "--date", "2026-02-01", "--comment", String(repeating: "x", count: 501)] + who, "[invalid_text]"),
        (["correct", "--kind", "injury", "--date", "2026-02-01"] + who, "--id is required (the entry to correct)"),
        (["retract"] + who, "--id is required (the entry to retract)"),
        (["retract", "--id", "inj-1", "--kind", "injury"] + who, "a retraction takes --id only"),
        (["retract", "--id", String(repeating: "i", count: 129)] + who, "[invalid_field]"),
        (["add", "--kind", "injury", "--date", "2026-02-01", "--wait", "-1"] + who, "--wait is 0-600 seconds"),
        (["add", "--kind", "injury", "--date", "2026-02-01", "--colour", "red"] + who, "unknown option '--colour'"),
        (["add", "--kind", "injury", "--date", "2026-02-01", "--account", "kim"] + who, "--account needs --credentials FILE")
    ])
    func usageErrors(_ c: ([String], String)) throws {
        let r = try ProductRun("mobilityctl", ["event"] + c.0)
        #expect(r.status == 2, "\(c.0): \(r.stderr)")
        #expect(r.stderr.contains(c.1), "\(c.0): \(r.stderr)")
        #expect(r.stdout.isEmpty, "nothing is printed as added")
    }

    @Test func helpIsNotAnError() throws {
        for args in [["--help"], ["add", "--help"]] {
            let r = try ProductRun("mobilityctl", ["event"] + args)
            #expect(r.status == 0 && r.stdout.contains("usage: mobilityctl event add"), "\(args): \(r.stderr)")
        }
    }

    /// Well formed, but no broker answers: a failure (exit 1) naming the broker, not a usage error.
    @Test func anUnreachableBrokerIsAFailure() throws {
        let r = try ProductRun("mobilityctl", ["event", "retract", "--id", "inj-1"] + Self.who)
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("mobilityctl event retract:") && r.stderr.contains("127.0.0.1"), "\(r.stderr)")
    }

    /// An entry added without `--id` gets the id every new entry gets (``TimelineEvent/newID()``), printed on stdout.
    @Test func anAddedEntrysIDIsTheOneFormat() throws {
        let broker = try MosquittoBroker()
        var ids: Set<String> = []
        for _ in 0..<3 {
            let r = try ProductRun(
                "mobilityctl",
                ["event", "add", "--kind", "fall", "--date", "2026-02-01", "--team", "ward-a", "--user", "jamie", "--by", "nurse.kim", "--wait", "0"]
                    + ["--broker", broker.url])
            #expect(r.status == 0, "\(r.stderr)")
            let id = r.stdout.trimmingCharacters(in: .newlines)
            #expect(id.wholeMatch(of: /entry-[0-9a-f]{16}/) != nil, "\(r.stdout)")
            ids.insert(id)
        }
        #expect(ids.count == 3)
    }
}
