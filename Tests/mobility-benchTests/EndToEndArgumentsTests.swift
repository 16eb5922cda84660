import Foundation
import TestSupport
import Testing

/// `mobility-bench e2e`'s arguments, the built executable run with wrong ones: each gets exit
/// status 2 and a message that names the argument.
@Suite struct EndToEndArgumentsTests {
    /// Runs the built `mobility-bench` with `arguments`; its exit status and standard error.
    static func bench(_ arguments: [String]) throws -> (status: Int32, stderr: String) {
        let exe = ChildProcess.product("mobility-bench")
        guard FileManager.default.isExecutableFile(atPath: exe) else { throw HarnessError("\(exe) is not built; run 'swift build' first") }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exe)
        p.arguments = arguments
        let err = Pipe()
        p.standardError = err
        p.standardOutput = Pipe()
        try p.run()
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return (p.terminationStatus, text)
    }

    @Test func aBadCPUArgumentIsRefused() throws {
        for bad in ["mosquitto", "mosquitto=", "=12", "mobilityd=-3", "mobilityd=abc"] {
            let run = try Self.bench(["e2e", "--cpu", bad])
            #expect(run.status == 2, "--cpu \(bad)")
            #expect(run.stderr == "mobility-bench e2e: --cpu wants NAME=PID, got '\(bad)'\n")
        }
    }

    @Test func anUnknownOptionGetsTheUsage() throws {
        let run = try Self.bench(["e2e", "--cpus", "mobilityd=1"])
        #expect(run.status == 2)
        #expect(run.stderr.hasPrefix("usage: mobility-bench"), "\(run.stderr)")
        #expect(run.stderr.contains("[--cpu NAME=PID ...]"), "\(run.stderr)")
    }
}
