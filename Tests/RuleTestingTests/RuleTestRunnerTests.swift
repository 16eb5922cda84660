import Foundation
import RuleTesting
import TestSupport
import Testing

@Suite struct RuleTestRunnerTests {
    @Test func expandsCompactNotation() throws {
        let v = try RuleTestFile.expand(["1.5x3", "0.7+0.1x3", "_x2", "2", "5-1x2", "_"])
        #expect(v.count == 12)
        #expect(v[0] == 1.5 && v[2] == 1.5)
        #expect(abs(v[5]! - 0.9) < 1e-12)
        #expect(v[6] == nil && v[7] == nil && v[8] == 2 && v[9] == 5 && v[10] == 4 && v[11] == nil)
        #expect(throws: (any Error).self) { try RuleTestFile.expand(["1x0"]) }
        #expect(throws: (any Error).self) { try RuleTestFile.expand(["abc"]) }
    }

    @Test func shippedRuleTestsPass() {
        let report = RuleTestRunner.run(paths: [RepoPaths.rules + "/tests"])
        #expect(report.ok, "\(report.text)")
        #expect(report.passed >= 15)
        #expect(report.text.hasSuffix("\(report.passed) passed, 0 failed\n"))
    }

    @Test func failingExpectationShowsADiff() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mw-ruletest-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try "series n = count(walkingSpeed)\nalert gap {\n let m = missing_days(n)\n when m >= 2 d\n}\n"
            .write(to: dir.appendingPathComponent("gap.rules"), atomically: true, encoding: .utf8)
        let test = """
            rules gap.rules
            test "wrong day on purpose" {
              input walkingSpeed m/s: 1x5 _x3 1x2
              expect gap firing day 9, resolved day 9
              expect series n day 2 = 3 m/s
            }
            """
        let report = RuleTestRunner.run(path: dir.appendingPathComponent("x.test").path, text: test)
        #expect(!report.ok && report.failed == 1)
        #expect(report.text.contains("expected: firing day 9, resolved day 9"))
        #expect(report.text.contains("got:      firing day 7, resolved day 9"))
        #expect(report.text.contains("line 5: series 'n' is not in m/s"))
    }

    @Test func testFileErrorsHavePositions() {
        let report = RuleTestRunner.run(path: "bad.test", text: "rules .\ntest \"x\" {\n  input fooSpeed m/s: 1\n  bogus\n}\n")
        #expect(!report.ok)
        #expect(report.text.contains("bad.test:3: error: unknown metric 'fooSpeed'"))
        #expect(report.text.contains("bad.test:4: error: unknown statement 'bogus'"))
    }

    /// Two lines giving one metric a value on the same day would generate samples with the same
    /// ids, of which the engine keeps the first: refused, where lines that share no day are not.
    @Test func overlappingInputsOfOneMetricAreRefused() {
        let overlapping = "rules .\ntest \"x\" {\n  input walkingSpeed m/s: 1 1 1\n  input walkingSpeed m/s from day 3: 2 2\n}\n"
        let (_, errors) = RuleTestFile.parse(path: "x.test", text: overlapping)
        #expect(errors.map(\.line) == [4])
        #expect(errors.first?.message.contains("already gives day 3 a value") == true)
        let apart =
            "rules .\ntest \"x\" {\n  input walkingSpeed m/s: 1 1 _\n  input walkingSpeed m/s from day 3: 2 2\n  input walkingSpeed m/s user_entered: 1 1 1\n}\n"
        #expect(RuleTestFile.parse(path: "x.test", text: apart).1.isEmpty)
    }
}

/// Daily rules count local calendar days: a 23- or 25-hour DST day is one day.
@Suite struct DaylightSavingDurationTests {
    static let rules =
        "series m = mean(walkingSpeed)\nalert slow {\n  when m < 1 m/s\n  for 3 d\n  repeat 2 d\n}\n"
        + "alert dip {\n  when m < 1 m/s\n  keep_firing_for 2 d\n  cooldown 3 d\n}\n"

    func run(start: String, _ body: String) throws -> RuleTestReport {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mw-dst-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try Self.rules.write(to: dir.appendingPathComponent("slow.rules"), atomically: true, encoding: .utf8)
        let test = "rules slow.rules\ntest \"dst\" {\n  time_zone America/Los_Angeles\n  start \(start)\n\(body)\n}\n"
        return RuleTestRunner.run(path: dir.appendingPathComponent("x.test").path, text: test)
    }

    @Test(arguments: ["2026-03-01", "2026-03-11", "2026-10-25"])
    func forAndRepeatCountLocalDays(start: String) throws {
        // Day 8 is 2026-03-08 (23 h, spring forward) from 03-01, and 2026-11-01 (25 h) from 10-25.
        let report = try run(
            start: start,
            """
              input walkingSpeed m/s: 1.2x5 0.8x10
              expect slow firing day 8, repeat day 10, repeat day 12, repeat day 14
            """)
        #expect(report.ok, "\(report.text)")
    }

    @Test(arguments: ["2026-03-01", "2026-10-25"])
    func keepFiringForAndCooldownCountLocalDays(start: String) throws {
        // true on day 6, false from day 7: keep_firing_for 2 d resolves on day 8 (the DST day);
        // true again on days 9-11: the cooldown of 3 d after day 8 allows a new firing on day 11.
        let report = try run(
            start: start,
            """
              input walkingSpeed m/s: 1.2x5 0.8 1.2x2 0.8x3 1.2x2
              expect dip firing day 6, resolved day 8, firing day 11, resolved day 13
            """)
        #expect(report.ok, "\(report.text)")
    }
}

/// A test's rule paths stay under its directory: `rules /etc/passwd` printed that file's lines as diagnostics.
@Suite struct RuleTestPathTests {
    static func tree() throws -> URL {
        let dir = URL(fileURLWithPath: TemporaryPath.make("mw-paths"))
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("tests"), withIntermediateDirectories: true)
        try "alert slow { when mean(walkingSpeed) < 1 m/s }\n".write(to: dir.appendingPathComponent("a.rules"), atomically: true, encoding: .utf8)
        return dir
    }

    static let body = "test \"t\" {\n  input walkingSpeed m/s: 0.5x2\n  expect slow firing day 1\n}\n"

    @Test func aRulePathOutsideTheTreeIsRefusedUnread() throws {
        let dir = try Self.tree()
        defer { try? FileManager.default.removeItem(at: dir) }
        let test = dir.appendingPathComponent("tests/x.test").path
        let report = RuleTestRunner.run(path: test, text: "rules /etc/passwd\n" + Self.body)
        #expect(!report.ok)
        #expect(report.text.contains("x.test:1: error: rule path '/etc/passwd' is outside the test's tree"))
        #expect(!report.text.contains("root:"))  // no line of the target is shown
    }

    @Test func dotDotAndSymbolicLinksOutOfTheTreeAreRefused() throws {
        let dir = try Self.tree()
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.createSymbolicLink(atPath: dir.appendingPathComponent("passwd.rules").path, withDestinationPath: "/etc/passwd")
        let test = dir.appendingPathComponent("tests/x.test").path
        for line in ["rules ../passwd.rules", "rules ../../../../../../../../etc/passwd"] {
            let report = RuleTestRunner.run(path: test, text: line + "\n" + Self.body)
            #expect(!report.ok && report.text.contains("is outside the test's tree"), "\(report.text)")
            #expect(!report.text.contains("root:"))
        }
    }

    @Test func rulesInTheTreePassAndARootOptionAllowsMore() throws {
        let dir = try Self.tree()
        let other = try Self.tree()
        defer { try? FileManager.default.removeItem(at: dir); try? FileManager.default.removeItem(at: other) }
        let test = dir.appendingPathComponent("tests/x.test").path
        #expect(RuleTestRunner.run(path: test, text: "rules ../a.rules\n" + Self.body).ok)
        #expect(RuleTestRunner.run(path: test, text: Self.body).ok)  // the default, `rules ..`
        let outside = "rules \(other.appendingPathComponent("a.rules").path)\n" + Self.body
        #expect(!RuleTestRunner.run(path: test, text: outside).ok)
        #expect(RuleTestRunner.run(path: test, text: outside, rulesRoots: [other.path]).ok)
    }
}
