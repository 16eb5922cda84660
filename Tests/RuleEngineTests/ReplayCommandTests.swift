import EngineTestSupport
import Foundation
import MobilityModel
import TestSupport
import Testing

/// `mobilityctl replay`, the built executable: what it drops is said on stderr and in the exit
/// code, and the end of the file closes the last day of data.
@Suite(.serialized) struct ReplayCommandTests {
    func replay(_ lines: [String], _ options: [String] = []) throws -> ProductRun {
        let file = TemporaryPath.make("mw-replay", suffix: ".jsonl")
        try (lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        return try ProductRun("mobilityctl", ["replay", "--rules", RepoPaths.rules] + options + [file])
    }

    static func line(_ user: String, id: String, value: Double = 1.2, end: String) -> String {
        "{\"topic\":\"mobility/v1/users/\(user)/samples\",\"payload\":{\"id\":\"\(id)\",\"type\":\"walkingSpeed\",\"value\":\(value),"
            + "\"unit\":\"m/s\",\"start\":\"\(end)\",\"end\":\"\(end)\"}}"
    }

    @Test func rejectionsAreSummarisedOnStderrAndEachShownWithVerbose() throws {
        let lines = [
            Self.line("ann", id: "a1", value: 40, end: "2026-03-01T10:00:00Z"),
            Self.line("ann", id: "a2", value: 41, end: "2026-03-01T11:00:00Z"),
            Self.line("ann", id: "a3", value: 1.2, end: "2026-03-10T11:00:00Z"),
            Self.line("ann", id: "a4", value: 1.2, end: "2026-02-01T11:00:00Z")
        ]
        let r = try replay(lines)
        #expect(r.status == 0)
        #expect(r.stderr.contains("4 lines, 0 malformed, 3 rejected (out_of_range 2, too_late 1)"), "\(r.stderr)")
        let v = try replay(lines, ["--verbose"])
        #expect(v.stderr.contains(":1: rejected: {\"reason\":\"out_of_range\""), "\(v.stderr)")
        #expect(v.stderr.contains(":4: rejected: {\"reason\":\"too_late\""), "\(v.stderr)")
    }

    @Test func malformedLinesAreCountedAndSetTheExitCode() throws {
        let r = try replay(["not json", Self.line("bo", id: "b1", end: "2026-03-01T10:00:00Z"), "{\"payload\":1}"], ["--series"])
        #expect(r.status == 3)
        #expect(r.stderr.contains(":1: malformed line: not a JSON line"), "\(r.stderr)")
        #expect(r.stderr.contains(":3: malformed line: missing string field 'topic'"), "\(r.stderr)")
        #expect(r.stderr.contains("3 lines, 2 malformed, 0 rejected"), "\(r.stderr)")
        #expect(r.stdout.contains("\"user\":\"bo\""))  // the valid line was replayed
    }

    @Test func theEndOfTheFileClosesTheLastDayOfData() throws {
        let lines = (1...3).map { d in Self.line("cy", id: "c\(d)", end: "2026-03-0\(d)T10:00:00Z") }
        func days(_ r: ProductRun) -> Set<String> {
            Set(
                r.stdout.split(separator: "\n").compactMap { l in
                    guard case .string(let d)? = try? JSONValue.parse(Array(l.utf8)).get()["day"] else { return nil }
                    return d
                })
        }
        let closed = try replay(lines, ["--series"])
        #expect(closed.status == 0)
        #expect(days(closed) == ["2026-03-01", "2026-03-02", "2026-03-03"])
        let open = try replay(lines, ["--series", "--no-final-close"])
        #expect(days(open) == ["2026-03-01", "2026-03-02"])
    }

    @Test func oneAndTwoThreadsPrintTheSameBytes() throws {
        var lines = (1...30).flatMap { d in
            ["ann", "bo", "cy", "dee"].map { u in
                Self.line(u, id: "\(u)\(d)", value: 1 + Double(d % 7) / 10, end: "2026-03-\(String(format: "%02d", d))T10:00:00Z")
            }
        }
        lines.insert("not json", at: 17)
        lines.insert(Self.line("bo", id: "far", value: 40, end: "2026-03-05T10:00:00Z"), at: 40)
        let one = try replay(lines, ["--series", "--verbose", "--threads", "1"])
        let two = try replay(lines, ["--series", "--verbose", "--threads", "2"])
        #expect(one.status == 3 && two.status == 3)
        #expect(one.stdout.split(separator: "\n").count > 200)
        #expect(one.stdout == two.stdout)
        // The same diagnostics, but for the name of the temporary file that starts each line.
        func withoutFile(_ s: String) -> [Substring] { s.split(separator: "\n").map { $0.hasPrefix("/") ? $0.drop { $0 != ":" } : $0 } }
        #expect(withoutFile(one.stderr) == withoutFile(two.stderr))
        #expect(two.stderr.contains(":18: malformed line: not a JSON line"), "\(two.stderr)")
        #expect(two.stderr.contains(":41: rejected: {\"reason\":\"out_of_range\""), "\(two.stderr)")
    }
}
