import Foundation
import TestSupport
import Testing

/// `mobilityctl export`'s arguments and state directory: each mistake is a usage error (exit 2)
/// that says what is wrong; a directory without a readable state is a failure (exit 1) that
/// leaves no output file behind.
@Suite(.serialized) struct ExportCommandTests {
    static func run(_ args: [String], environment: [String: String] = [:]) throws -> ProductRun {
        try ProductRun("mobilityctl", ["export"] + args, environment: environment)
    }

    @Test(arguments: [
        ([], "--state is required"),
        (["--state"], "--state needs a value"),
        (["--state", "/tmp", "--from", "2026-3-5"], "--from '2026-3-5' is not a day"),
        (["--state", "/tmp", "--to", "2026-02-30"], "--to '2026-02-30' is not a day"),
        (["--state", "/tmp", "--from", "2026-03-09", "--to", "2026-03-02"], "--from 2026-03-09 is after --to 2026-03-02"),
        (["--state", "/tmp", "--format", "xlsx"], "unknown format 'xlsx'; expected csv"),
        (["--state", "/tmp", "--format", "parquet"], "Parquet is not supported: Debian ships no maintained Parquet library"),
        (["--state", "/tmp", "--team", "north/*"], "--team is 1-64 of"),
        (["--state", "/tmp", "--week", "2026-W10"], "unknown argument --week")
    ])
    func usageErrors(_ c: ([String], String)) throws {
        let r = try Self.run(c.0)
        #expect(r.status == 2, "\(c.0): \(r.stderr)")
        #expect(r.stderr.contains(c.1), "\(c.0): \(r.stderr)")
        #expect(r.stdout.isEmpty)
    }

    @Test func aMissingOrWrongStateDirectoryIsAFailure() throws {
        let missing = TemporaryPath.make("mw-export-missing")
        var r = try Self.run(["--state", missing])
        #expect(r.status == 1)
        #expect(r.stderr.contains("\(missing) is not a directory"), "\(r.stderr)")

        let empty = TemporaryPath.make("mw-export-empty")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        r = try Self.run(["--state", empty])
        #expect(r.status == 1)
        #expect(r.stderr.contains("holds no mobilityd state (no state.sqlite)"), "\(r.stderr)")

        try Data("not a database, just text that is long enough to be read as a header....".utf8).write(to: URL(fileURLWithPath: empty + "/state.sqlite"))
        let out = empty + "/out.csv"
        r = try Self.run(["--state", empty, "-o", out])
        #expect(r.status == 1)
        #expect(r.stderr.contains("cannot read \(empty)/state.sqlite"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out), "a failed export leaves no file")
        #expect(try FileManager.default.contentsOfDirectory(atPath: empty) == ["state.sqlite"])
    }
}
