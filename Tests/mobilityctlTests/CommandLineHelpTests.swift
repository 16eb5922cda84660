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
}
