import Foundation
import TestSupport
import Testing

/// `mobility-bench e2e`'s arguments, the built executable run with wrong ones: each gets exit
/// status 2 and a message that names the argument.
@Suite struct EndToEndArgumentsTests {
    @Test func aBadCPUArgumentIsRefused() throws {
        for bad in ["mosquitto", "mosquitto=", "=12", "mobilityd=-3", "mobilityd=abc"] {
            let run = try ProductRun("mobility-bench", ["e2e", "--cpu", bad])
            #expect(run.status == 2, "--cpu \(bad)")
            #expect(run.stderr == "mobility-bench e2e: --cpu wants NAME=PID, got '\(bad)'\n")
        }
    }

    @Test func anUnknownOptionGetsTheUsage() throws {
        let run = try ProductRun("mobility-bench", ["e2e", "--cpus", "mobilityd=1"])
        #expect(run.status == 2)
        #expect(run.stderr.hasPrefix("mobility-bench e2e: unknown option '--cpus'\n\nusage: mobility-bench"), "\(run.stderr)")
        #expect(run.stderr.contains("[--cpu NAME=PID ...]"), "\(run.stderr)")
    }
}
