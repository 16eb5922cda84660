import Foundation
import TestSupport
import Testing

/// `mobilityctl fhir export`'s arguments: each mistake is a usage error (exit 2) that says what
/// is wrong; a directory without state or an unknown user is a failure (exit 1).
@Suite struct FHIRCommandTests {
    static func run(_ args: [String]) throws -> (status: Int32, stderr: String) {
        let r = try ProductRun("mobilityctl", ["fhir"] + args)
        return (r.status, r.stderr)
    }

    @Test(arguments: [
        ([], "name a subcommand"),
        (["import"], "unknown subcommand 'import'"),
        (["export"], "--state is required"),
        (["export", "--state"], "--state needs a value"),
        (["export", "--state", "/tmp", "--from", "2026-3-5"], "--from '2026-3-5' is not a day"),
        (["export", "--state", "/tmp", "--to", "2026-02-30"], "--to '2026-02-30' is not a day"),
        (["export", "--state", "/tmp", "--from", "2026-03-09", "--to", "2026-03-02"], "--from 2026-03-09 is after --to 2026-03-02"),
        (["export", "--state", "/tmp", "--week", "2026-W10"], "unknown argument --week")
    ])
    func usageErrors(_ c: ([String], String)) throws {
        let r = try Self.run(c.0)
        #expect(r.status == 2, "\(c.0): \(r.stderr)")
        #expect(r.stderr.contains(c.1), "\(c.0): \(r.stderr)")
        #expect(r.stderr.contains("usage: mobilityctl fhir export"))
    }

    @Test func aDirectoryWithoutStateIsAFailure() throws {
        let dir = TemporaryPath.make("mw-nostate")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try Self.run(["export", "--state", dir])
        #expect(r.status == 1)
        #expect(r.stderr.contains("holds no mobilityd state"), "\(r.stderr)")
    }
}
