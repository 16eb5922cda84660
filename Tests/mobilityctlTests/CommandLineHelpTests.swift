import Foundation
import TestSupport
import Testing

/// Every subcommand of the shipped tools, as a person tries them: `--help` prints the usage on
/// stdout and exits 0; an option that does not exist is a usage error (exit 2) that names it.
@Suite struct CommandLineHelpTests {
    static let commands: [(String, [String])] =
        [
            "check", "test", "replay", "report", "ack", "audit", "silence", "silence add", "silence query", "silence expire", "event", "event add",
            "event correct", "event retract", "alerts", "fhir", "fhir export", "help"
        ].map { ("mobilityctl", $0.split(separator: " ").map(String.init)) }
        + ["", "list", "record", "play", "verify", "export", "population", "quality"].map { ("mobility-sim", $0.isEmpty ? [] : [$0]) }
        + ["", "e2e", "store-commits"].map { ("mobility-bench", $0.isEmpty ? [] : [$0]) }

    @Test(arguments: commands)
    func helpIsUsageOnStdout(_ tool: String, _ command: [String]) throws {
        for flag in ["--help", "-h"] {
            let r = try ProductRun(tool, command + [flag])
            #expect(r.status == 0, "\(tool) \(command) \(flag): \(r.stderr)")
            #expect(r.stdout.hasPrefix("usage: \(tool)"), "\(tool) \(command) \(flag): \(r.stdout)")
            #expect(r.stderr.isEmpty, "\(tool) \(command) \(flag): \(r.stderr)")
        }
    }

    @Test(arguments: commands)
    func aBogusOptionIsAUsageErrorThatNamesIt(_ tool: String, _ command: [String]) throws {
        let r = try ProductRun(tool, command + ["--bogus"])
        #expect(r.status == 2, "\(tool) \(command): \(r.stdout) \(r.stderr)")
        #expect(r.stderr.hasPrefix("\(tool)") && r.stderr.contains("unknown") && r.stderr.contains("--bogus"), "\(tool) \(command): \(r.stderr)")
        #expect(r.stdout.isEmpty, "\(tool) \(command): \(r.stdout)")
    }

    /// `-h` or `--help` as an option's value (a comment or note may say anything) is that value,
    /// not a request for help: the command goes on to the broker (here nothing listens).
    @Test(arguments: [
        ["silence", "add", "--team", "north", "user=jamie", "--duration", "2h", "--comment", "-h", "--author", "nurse.kim"],
        ["event", "add", "--team", "north", "--user", "jamie", "--kind", "fall", "--date", "2026-03-02", "--note", "--help", "--by", "nurse.kim"]
    ])
    func helpAsAnOptionsValueIsThatValue(_ args: [String]) throws {
        let port = try freePort()
        let r = try ProductRun("mobilityctl", args + ["--broker", "mqtt://127.0.0.1:\(port)", "--wait", "1"])
        #expect(!r.stdout.hasPrefix("usage:"), "\(args): \(r.stdout)")
        #expect(r.status == 1, "\(args): \(r.stdout) \(r.stderr)")
        #expect(r.stderr.contains("127.0.0.1:\(port)"), "\(args): the broker was not tried: \(r.stderr)")
    }
}
