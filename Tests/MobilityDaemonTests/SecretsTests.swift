import Foundation
import Glibc
import TestSupport
import Testing

@testable import MobilityDaemon

/// The MQTT password: never on the command line, never in a file others can read.
@Suite struct SecretsTests {
    static func file(_ text: String, mode: mode_t) throws -> String {
        let path = TemporaryPath.make("mw-secret")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, mode)
        return path
    }

    static func problem(_ args: [String], _ env: [String: String] = [:]) -> String? {
        do { _ = try DaemonConfiguration.load(arguments: args, environment: env); return nil } catch { return error.description }
    }

    @Test(arguments: [["--password", "hunter2"], ["--password=hunter2"]])
    func aPasswordOnTheCommandLineIsRefused(args: [String]) throws {
        let p = try #require(Self.problem(args))
        #expect(p.contains("--password-file") && p.contains("command line"))
        #expect(!p.contains("hunter2"))  // the refusal does not echo the secret
    }

    @Test func thePasswordComesFromAPrivateFileTheConfigOrTheEnvironment() throws {
        let pw = try Self.file("s3cret\n", mode: 0o600)
        defer { unlink(pw) }
        #expect(try DaemonConfiguration.load(arguments: ["--password-file", pw], environment: [:]).password == "s3cret")
        let conf = try Self.file("password = fromfile\n", mode: 0o600)
        defer { unlink(conf) }
        #expect(try DaemonConfiguration.load(arguments: ["--config", conf], environment: [:]).password == "fromfile")
        let confWithFile = try Self.file("password-file = \(pw)\n", mode: 0o644)  // names the secret, holds none
        defer { unlink(confWithFile) }
        #expect(try DaemonConfiguration.load(arguments: ["--config", confWithFile], environment: [:]).password == "s3cret")
        #expect(try DaemonConfiguration.load(arguments: [], environment: ["MOBILITYD_PASSWORD": "env"]).password == "env")
    }

    @Test(arguments: [mode_t(0o644), mode_t(0o640), mode_t(0o604), mode_t(0o660)])
    func aConfigFileHoldingAPasswordReadableByOthersIsRefused(mode: mode_t) throws {
        let conf = try Self.file("username = mobilityd\npublisher-username = mobilityd-pub\npassword = hunter2\n", mode: mode)
        defer { unlink(conf) }
        let p = try #require(Self.problem(["--config", conf]))
        #expect(p.contains(conf) && p.contains("chmod 600") && p.contains("0" + String(mode, radix: 8)))
        #expect(!p.contains("hunter2"))
    }

    @Test func aPasswordFileReadableByOthersOrEmptyIsRefused() throws {
        let loose = try Self.file("hunter2\n", mode: 0o644)
        defer { unlink(loose) }
        #expect(Self.problem(["--password-file", loose])?.contains("chmod 600") == true)
        let empty = try Self.file("\n", mode: 0o600)
        defer { unlink(empty) }
        #expect(Self.problem(["--password-file", empty])?.contains("empty") == true)
        #expect(Self.problem(["--password-file", "/nonexistent/mw-password"])?.contains("cannot read") == true)
    }

    @Test func aConfigFileWithoutAPasswordMayBeReadable() throws {
        let conf = try Self.file("username = mobilityd\npublisher-username = mobilityd-pub\n", mode: 0o644)
        defer { unlink(conf) }
        #expect(Self.problem(["--config", conf]) == nil)
    }

    @Test func mobilitydExitsTwoWithTheReason() throws {
        let argv = try ChildProcess(ChildProcess.product("mobilityd"), ["--rules", RepoPaths.rules, "--password", "hunter2", "--check-config"])
        #expect(argv.wait() == 2)
        #expect(argv.log.contains("--password-file") && !argv.log.contains("hunter2"))
        let conf = try Self.file("password = hunter2\n", mode: 0o644)
        defer { unlink(conf) }
        let loose = try ChildProcess(ChildProcess.product("mobilityd"), ["--rules", RepoPaths.rules, "--config", conf, "--check-config"])
        #expect(loose.wait() == 2)
        #expect(loose.log.contains("chmod 600 \(conf)"))
    }

    /// The shipped example, with only paths and the broker substituted, is a valid configuration.
    @Test func theShippedExampleConfigurationLoads() throws {
        var text = try String(contentsOfFile: RepoPaths.root + "/deploy/mobilityd.conf.example", encoding: .utf8)
        #expect(!text.split(separator: "\n").contains { $0.hasPrefix("password =") || $0.hasPrefix("password=") })  // no secret in it
        let pw = try Self.file("s3cret\n", mode: 0o600)
        defer { unlink(pw) }
        text = text.replacingOccurrences(of: "/etc/mobilitywatch/rules", with: RepoPaths.rules)
        let conf = try Self.file(text, mode: 0o644)
        defer { unlink(conf) }
        // As the shipped unit starts it: the password from the systemd credential, by file.
        let c = try DaemonConfiguration.load(arguments: ["--config", conf, "--password-file", pw], environment: [:])
        #expect(c.password == "s3cret" && c.username == "mobilityd" && c.rules == RepoPaths.rules)
    }
}
