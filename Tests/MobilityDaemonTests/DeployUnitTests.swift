import Foundation
import Glibc
import TestSupport
import Testing

/// `deploy/mobilityd.service` as shipped: systemd's own checks, and its `ExecStart` line run
/// against a test broker the way systemd would start it (only paths, the port and the secret
/// substituted). No systemd is running here; `systemd-analyze` reads the file offline.
@Suite(.serialized) struct DeployUnitTests {
    static let unitPath = RepoPaths.root + "/deploy/mobilityd.service"

    /// Runs a program to completion; its exit code and output (stdout and stderr together).
    static func run(_ program: String, _ args: [String]) throws -> (Int32, String) {
        let p = try ChildProcess(program, args)
        let code = p.wait(timeout: 60)
        return (code, p.log)
    }

    static var systemdAnalyze: String {
        get throws {
            // scripts/install-deps.sh installs the systemd package; a missing tool fails the test.
            try #require(
                ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first { FileManager.default.isExecutableFile(atPath: $0) },
                "systemd-analyze is missing: run scripts/install-deps.sh")
        }
    }

    static func unitSettings() throws -> [String: [String]] {
        var m: [String: [String]] = [:]
        for line in try String(contentsOfFile: unitPath, encoding: .utf8).split(separator: "\n") where !line.hasPrefix("#") {
            guard let eq = line.firstIndex(of: "=") else { continue }
            m[String(line[..<eq]), default: []].append(String(line[line.index(after: eq)...]))
        }
        return m
    }

    @Test func securityExposureIsAtMostTwoAndDocumented() throws {
        let (code, out) = try Self.run(try Self.systemdAnalyze, ["security", "--offline=yes", "--no-pager", Self.unitPath])
        #expect(code == 0, "\(out)")
        let label = "Overall exposure level for mobilityd.service:"
        let line = try #require(out.split(separator: "\n").first { $0.contains(label) })
        // The score is the first word after the label; what follows it is locale-dependent (an
        // emoji, or ":-)" under LANG=C, whose colon a split on ":" would take for the separator).
        let after = line[line.range(of: label)!.upperBound...]
        let score = try #require(after.split(separator: " ").first.flatMap { Double($0) }, "\(line)")
        #expect(score <= 2.0, "\(out)")
        let doc = try String(contentsOfFile: RepoPaths.root + "/docs/security.md", encoding: .utf8)
        #expect(doc.contains("exposure level **\(String(format: "%.1f", score))**"), "docs/security.md must record the score \(score)")
    }

    @Test func verifyIsClean() throws {
        // verify wants the ExecStart binary to exist: only its path is substituted.
        let dir = TemporaryPath.make("mw-unit")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let unit = try String(contentsOfFile: Self.unitPath, encoding: .utf8)
            .replacingOccurrences(of: "/usr/local/bin/mobilityd", with: ChildProcess.product("mobilityd"))
        try unit.write(toFile: dir + "/mobilityd.service", atomically: true, encoding: .utf8)
        let (code, out) = try Self.run(try Self.systemdAnalyze, ["verify", dir + "/mobilityd.service"])
        #expect(code == 0 && !out.contains("mobilityd"), "\(out)")
    }

    @Test func theUnitSpeaksNotifyAndKeepsStatePrivate() throws {
        let s = try Self.unitSettings()
        #expect(s["Type"] == ["notify"] && s["NotifyAccess"] == ["main"] && s["WatchdogSec"]?.isEmpty == false)
        #expect(s["UMask"] == ["0077"] && s["StateDirectoryMode"] == ["0700"])
        #expect(s["CapabilityBoundingSet"] == [""] && s["SystemCallFilter"]?.contains("@system-service") == true)
        let exec = try #require(s["ExecStart"]?.first)
        #expect(!exec.contains("--password ") && exec.contains("--password-file"))
    }

    /// The unit's ExecStart, as systemd would run it: the credential in a directory of its own,
    /// the shipped example configuration against the shipped broker (over TLS with its CA file;
    /// only the broker's address, paths and metrics port substituted), NOTIFY_SOCKET and
    /// WATCHDOG_USEC set. It reports READY and serves.
    @Test func execStartRunsWithTheShippedConfiguration() throws {
        let deployment = try ShippedDeployment()
        let notify = try NotifySocket()
        let dir = deployment.dir
        try FileManager.default.createDirectory(atPath: dir + "/credentials", withIntermediateDirectories: true)
        try (deployment.passwords["mobilityd"]! + "\n").write(toFile: dir + "/credentials/mqtt-password", atomically: true, encoding: .utf8)
        chmod(dir + "/credentials/mqtt-password", 0o400)  // as systemd leaves a credential
        let port = try freePort()
        let example = try String(contentsOfFile: RepoPaths.root + "/deploy/mobilityd.conf.example", encoding: .utf8)
        let conf = try ShippedDeployment.substitute(
            example,
            [
                ("mqtts://mqtt.example.org:8883", deployment.tlsURL),
                ("/etc/mobilitywatch/ca.crt", deployment.ca),
                ("/etc/mobilitywatch/rules", RepoPaths.rules),
                ("/var/lib/mobilitywatch", dir + "/state"),
                ("127.0.0.1:9464", "127.0.0.1:\(port)")
            ])
        try conf.write(toFile: dir + "/mobilityd.conf", atomically: true, encoding: .utf8)
        chmod(dir + "/mobilityd.conf", 0o644)  // holds no secret

        let exec = try #require(try Self.unitSettings()["ExecStart"]?.first)
        let argv = exec.split(separator: " ").map {
            String($0).replacingOccurrences(of: "/usr/local/bin/mobilityd", with: ChildProcess.product("mobilityd"))
                .replacingOccurrences(of: "/etc/mobilitywatch/mobilityd.conf", with: dir + "/mobilityd.conf")
                .replacingOccurrences(of: "${CREDENTIALS_DIRECTORY}", with: dir + "/credentials")
        }
        let p = try ChildProcess(
            argv[0], Array(argv.dropFirst()),
            environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "30000000"])
        #expect(eventually(timeout: 15) { !notify.messages(with: "READY=1").isEmpty }, "\(p.log)")
        #expect(eventually { !notify.messages(with: "WATCHDOG=1").isEmpty })
        #expect(httpGet(port: port, path: "/healthz")?.status == 200)
        // log-format = json, as configured; the line may reach the pipe after READY=1
        #expect(eventually { p.log.contains("\"msg\":\"started\"") }, "\(p.log)")
        #expect(p.stop() == 0)
        #expect(!notify.messages(with: "STOPPING=1").isEmpty)
    }
}
