import Foundation
import RuleLanguage
import TestSupport
import Testing

/// Hostile rule files (generated here, not committed) and the limits of `RuleLimits`. Before these
/// limits each of the first four crashed `mobilityctl check` with a stack overflow (exit 139).
@Suite struct LimitsTests {
    static func errors(_ text: String) -> [Diagnostic] {
        Checker.check(text: text).diagnostics.filter { $0.severity == .error }
    }

    /// Checks and renders; every hostile file yields few, short diagnostics.
    static func rendered(_ text: String) -> (ids: [String], output: String) {
        let src = SourceFile(path: "hostile.rules", text: text)
        let (program, diags) = Checker.check([src])
        #expect(program == nil)
        return (diags.map(\.id.rawValue), DiagnosticRenderer(files: [src]).render(diags))
    }

    @Test func twoThousandNestedParentheses() {
        let (ids, out) = Self.rendered("series s = " + String(repeating: "(", count: 2000) + "mean(walkingSpeed)" + String(repeating: ")", count: 2000) + "\n")
        #expect(ids == ["nesting-too-deep"])
        #expect(out.hasPrefix("hostile.rules:1:76: error: expression nests more than 64 levels deep [nesting-too-deep]"))
        #expect(out.utf8.count < 1000)
    }

    @Test func aSumOfFiveThousandTerms() {
        let (ids, out) = Self.rendered("series s = " + Array(repeating: "mean(walkingSpeed)", count: 5000).joined(separator: " + ") + "\n")
        #expect(ids == ["expression-too-long"])
        #expect(out.utf8.count < 1000)
    }

    @Test func fiveThousandInvalidCharacters() {
        let (ids, out) = Self.rendered("series s = mean(walkingSpeed)\n" + String(repeating: "$", count: 5000) + "\n")
        #expect(ids == ["unexpected-character"])
        #expect(out.contains("2:1: error: 5000 unexpected characters, starting with '$'"))
        #expect(out.utf8.count < 1000)
    }

    @Test func aHundredThousandNots() {
        let (ids, out) = Self.rendered("alert a {\n  when " + String(repeating: "not ", count: 100_000) + "true\n}\n")
        #expect(ids == ["nesting-too-deep"])
        #expect(out.utf8.count < 1000)
    }

    @Test func theRestOfTheFileIsStillChecked() {
        // Recovery skips only the expression that is too deep: the next errors are reported too.
        let text =
            "series s = " + String(repeating: "(", count: 100) + "1" + String(repeating: ")", count: 100) + "\n"
            + "alert a { when 1 m/s > 25 % }\n"
        #expect(Self.errors(text).map(\.id.rawValue) == ["nesting-too-deep", "unit-mismatch"])
    }

    @Test func justUnderTheLimitsIsAccepted() {
        let nested = String(repeating: "(", count: 63) + "mean(walkingSpeed)" + String(repeating: ")", count: 63)
        let long = Array(repeating: "1 m/s", count: 255).joined(separator: " + ")  // 254 operators, and '>'
        let r = Checker.check(text: "series s = \(nested)\nalert a { when s > \(long)\n headline \"a\" }\n")
        #expect(r.diagnostics.isEmpty, "\(r.diagnostics.map(\.message))")
        #expect(r.program != nil)
    }

    @Test func oneOperatorTooManyIsRefused() {
        let long = Array(repeating: "1 m/s", count: 257).joined(separator: " + ")  // 256 operators, and '>'
        #expect(Self.errors("alert a { when 1 m/s > \(long) }").map(\.id.rawValue) == ["expression-too-long"])
    }

    @Test func diagnosticsAreCappedPerFile() {
        let src = SourceFile(path: "many.rules", text: String(repeating: "alert a { when x }\n", count: 500))
        let (_, diags) = Checker.check([src])
        #expect(diags.count == RuleLimits.maxDiagnosticsPerFile + 1)
        let last = diags.last!
        #expect(last.id == .tooManyDiagnostics && last.severity == .note)
        #expect(last.message == "too many diagnostics in this file; 400 more not shown")
    }

    @Test func lexerDiagnosticsAreCappedToo() {
        // 20 000 separate bad characters: the lexer keeps 100 and counts the rest.
        let text = String(repeating: "a $ ", count: 20_000)
        let (_, diags) = Checker.check([SourceFile(path: "x.rules", text: text)])
        #expect(diags.count == RuleLimits.maxDiagnosticsPerFile + 1)
        #expect(diags.last!.id == .tooManyDiagnostics)
    }

    @Test func aFileOverOneMebibyteIsRefusedUnparsed() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("limits-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("big.rules").path
        try String(repeating: "# comment\n", count: 110_000).write(toFile: path, atomically: true, encoding: .utf8)
        let (sources, errors) = RuleSet.load([path])
        #expect(errors.isEmpty)
        #expect(sources[0].bytes.count == RuleLimits.maxFileBytes + 1)  // read no further than that
        let (program, diags) = Checker.check(sources)
        #expect(program == nil)
        #expect(diags.map(\.id) == [.fileTooLarge])
    }

    @Test func aLongChainOfSeriesIsRefusedInEitherOrder() {
        var forward = "series s0 = mean(walkingSpeed)\n"
        for i in 1...2000 { forward += "series s\(i) = s\(i - 1) + 1 m/s\n" }
        var backward = ""
        for i in 0..<2000 { backward += "series s\(i) = s\(i + 1) + 1 m/s\n" }
        backward += "series s2000 = mean(walkingSpeed)\n"
        for text in [forward, backward] {
            let e = Self.errors(text)
            #expect(e.map(\.id.rawValue) == ["nesting-too-deep"], "\(e.map(\.message))")
        }
    }

    @Test func twentyChainedYearlyMeansAreTooCostly() {
        var text = "series c0 = mean(walkingSpeed)\n"
        for i in 1...20 { text += "series c\(i) = mean(c\(i - 1), 365 d)\n" }
        text += "alert chained { when c20 > 2 m/s }\n"
        let e = Self.errors(text)
        // One diagnostic, at the first link over the limit: the later links and the alert only inherit it.
        #expect(e.map(\.id.rawValue) == ["rule-too-costly"])
        #expect(e.first?.message == "series 'c5' computes about 1 335 891 values for one user's day, more than 1 000 000")
    }

    @Test func shortChainsAndTheShippedRulesAreWithinTheCostLimit() {
        var text = "series c0 = mean(walkingSpeed)\n"
        for i in 1...3 { text += "series c\(i) = mean(c\(i - 1), 365 d)\n" }
        let r = Checker.check(text: text)
        #expect(r.program != nil)
        let (sources, _) = RuleSet.load([RepoPaths.rules])
        let shipped = Checker.check(sources)
        #expect(shipped.program != nil)
        #expect(!shipped.diagnostics.contains { $0.id.rawValue == "rule-too-costly" })
    }

    @Test func theDeepestAcceptedRulesCheckOnAFourMebibyteStack() throws {
        // Checking at every limit at once needs about 2 MiB in a debug build (less in release);
        // the threads that check rules (main, dispatch workers for SIGHUP) have 8 MiB.
        let text = LimitsTests.deepestAccepted
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var diags: [Diagnostic] = []
        let t = Thread {
            diags = Checker.check(text: text).diagnostics
            done.signal()
        }
        t.stackSize = 4 << 20
        t.start()
        done.wait()
        #expect(diags.filter { $0.id != .missingHeadline }.isEmpty, "\(diags.map(\.message))")
    }

    /// Rules at the nesting, operator and depth limits at once.
    static let deepestAccepted: String = {
        var text = "series s0 = " + String(repeating: "(", count: 63) + "mean(walkingSpeed)" + String(repeating: ")", count: 63) + "\n"
        for i in 1...120 { text += "series s\(i) = s\(i - 1) + 1 m/s\n" }
        return text + "alert a { when " + String(repeating: "(", count: 62) + "s120 > " + Array(repeating: "1 m/s", count: 255).joined(separator: " + ")
            + String(repeating: ")", count: 62) + " }\n"
    }()
}
