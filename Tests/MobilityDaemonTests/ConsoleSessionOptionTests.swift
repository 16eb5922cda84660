import Foundation
import Glibc
import HTTPEndpoint
import TestSupport
import Testing

@testable import MobilityDaemon

/// `--console-session-idle` and `--console-session-max` (minutes), on the command line and in the
/// configuration file: checked at load, each mistake with its own message.
@Suite struct ConsoleSessionOptionTests {
    /// A listener with a console: a tokens file and a staff file in a scratch directory.
    static func listener() throws -> [String] {
        let dir = try ConsoleSignInTests.scratch()
        return ["--http-address", "127.0.0.1:9465", "--http-tokens", dir + "/tokens", "--console-staff", dir + "/staff"]
    }

    static func problem(_ arguments: [String]) -> String? {
        do {
            _ = try DaemonConfiguration.load(arguments: arguments, environment: [:])
            return nil
        } catch { return "\(error)" }
    }

    @Test func theDefaultsAreHalfAnHourAndAShift() throws {
        let c = try DaemonConfiguration.load(arguments: try Self.listener(), environment: [:])
        #expect(c.consoleSessionPolicy.idleMilliseconds == 30 * 60_000)
        #expect(c.consoleSessionPolicy.absoluteMilliseconds == 12 * 3_600_000)
    }

    @Test func theOptionsSetTheLifetimes() throws {
        let c = try DaemonConfiguration.load(
            arguments: try Self.listener() + ["--console-session-idle", "10", "--console-session-max", "480"], environment: [:])
        #expect(c.consoleSessionPolicy.idleMilliseconds == 10 * 60_000)
        #expect(c.consoleSessionPolicy.absoluteMilliseconds == 8 * 3_600_000)
        #expect(c.consoleSessionPolicy.failuresBeforeLock == 5)  // the lockout is not an option
    }

    @Test func theConfigurationFileSetsThemToo() throws {
        let args = try Self.listener()
        let file = TemporaryPath.make("mw-conf", suffix: ".conf")
        var text = ""
        for k in stride(from: 0, to: args.count, by: 2) { text += "\(args[k].dropFirst(2)) = \(args[k + 1])\n" }
        text += "console-session-idle = 15\nconsole-session-max = 60\n"
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        let c = try DaemonConfiguration.load(arguments: ["--config", file], environment: [:])
        #expect(c.consoleSessionPolicy.idleMilliseconds == 15 * 60_000)
        #expect(c.consoleSessionPolicy.absoluteMilliseconds == 60 * 60_000)
    }

    @Test func mistakesAreRefusedWithTheirReason() throws {
        let l = try Self.listener()
        for (extra, message) in [
            (["--console-session-idle", "0"], "--console-session-idle must be a whole number of minutes in 1...1440, not '0'"),
            (["--console-session-idle", "30m"], "--console-session-idle must be a whole number of minutes in 1...1440, not '30m'"),
            (["--console-session-max", "10081"], "--console-session-max must be a whole number of minutes in 1...10080, not '10081'"),
            (["--console-session-max", "-5"], "--console-session-max must be a whole number of minutes in 1...10080, not '-5'"),
            (
                ["--console-session-idle", "60", "--console-session-max", "30"],
                "--console-session-idle (60 min) is longer than --console-session-max (30 min)"
            )
        ] {
            let p = Self.problem(l + extra)
            #expect(p?.contains(message) == true, "\(extra): \(p ?? "accepted")")
        }
        // Without a console, or without the listener, the options are refused, not ignored.
        let noStaff = Array(l.prefix(4))
        #expect(Self.problem(noStaff + ["--console-session-idle", "10"])?.contains("--console-session-idle needs the console (--console-staff)") == true)
        #expect(Self.problem(["--console-session-max", "10"])?.contains("--console-session-max needs the report listener (--http-address)") == true)
    }
}
