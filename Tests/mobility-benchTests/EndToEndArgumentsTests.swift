import Foundation
import TestSupport
import Testing

/// `mobility-bench e2e`'s arguments, the built executable run with wrong ones: each gets exit
/// status 2 and a message that names the argument.
@Suite struct EndToEndArgumentsTests {
    @Test func aBadCPUArgumentIsRefused() throws {
        let exe = ChildProcess.product("mobility-bench")
        guard FileManager.default.isExecutableFile(atPath: exe) else { throw HarnessError("\(exe) is not built; run 'swift build' first") }
        for bad in ["mosquitto", "mosquitto=", "=12", "mobilityd=-3", "mobilityd=abc"] {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: exe)
            p.arguments = ["e2e", "--cpu", bad]
            let err = Pipe()
            p.standardError = err
            p.standardOutput = Pipe()
            try p.run()
            let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            #expect(p.terminationStatus == 2, "--cpu \(bad)")
            #expect(text == "mobility-bench e2e: --cpu wants NAME=PID, got '\(bad)'\n")
        }
    }

    @Test func anUnknownOptionGetsTheUsage() throws {
        let exe = ChildProcess.product("mobility-bench")
        guard FileManager.default.isExecutableFile(atPath: exe) else { throw HarnessError("\(exe) is not built; run 'swift build' first") }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exe)
        p.arguments = ["e2e", "--cpus", "mobilityd=1"]
        let err = Pipe()
        p.standardError = err
        p.standardOutput = Pipe()
        try p.run()
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 2)
        #expect(text.hasPrefix("usage: mobility-bench"), "\(text)")
        #expect(text.contains("[--cpu NAME=PID ...]"), "\(text)")
    }
}
