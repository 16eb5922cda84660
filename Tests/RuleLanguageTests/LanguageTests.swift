import Foundation
import MobilityModel
import RuleLanguage
import TestSupport
import Testing

private func ids(_ text: String) -> [String] {
    Checker.check(text: text).diagnostics.filter { $0.severity == .error }.map(\.id.rawValue)
}

@Suite struct LexerTests {
    @Test func unitsFollowNumbers() {
        var lx = Lexer(SourceFile(path: "t", text: "0.1 m/s 2.2mph 25 % 7 d 35 ml/(kg*min) 3 and x"), file: 0)
        let toks = lx.tokenize().map { "\($0.kind):\($0.text)" }
        #expect(
            toks == [
                "number:0.1", "unit:m/s", "number:2.2", "unit:mph", "number:25", "unit:%", "number:7", "unit:d",
                "number:35", "unit:ml/(kg*min)", "number:3", "identifier:and", "identifier:x", "eof:"
            ])
        #expect(lx.diagnostics.isEmpty)
    }

    @Test func survivesRandomBytes() {
        var rng = SplitMix64(seed: 2026)
        let alphabet = Array("series alert { } ( ) , : = < > + - * / % # \" \n 0123 .5 m/s d when let for and or not é\u{0}".unicodeScalars)
        for _ in 0..<2000 {
            let n = Int.random(in: 0..<120, using: &rng)
            var s = ""
            for _ in 0..<n { s.unicodeScalars.append(alphabet.randomElement(using: &rng)!) }
            _ = Checker.check(text: s)  // never crashes, always terminates
        }
    }
}

@Suite struct ParserTests {
    @Test func recoversAndReportsEveryError() {
        let text = """
            alert a {
              when x <
              for 3 d
            }
            alert b {
              when 1 m/s > 
            }
            seris c = 1
            alert d {
              when true
            }
            """
        let r = Checker.check(text: text)
        let errors = r.diagnostics.filter { $0.severity == .error }
        #expect(errors.count >= 3, "\(errors.map(\.message))")
        #expect(errors.contains { $0.fixIts.contains { $0.replacement == "series" } })
        #expect(r.program == nil)
    }

    @Test func comparisonsDoNotChain() {
        #expect(ids("alert a { when 1 < 2 < 3 }").contains("unexpected-token"))
    }
}

@Suite struct CheckerTests {
    @Test(arguments: [
        ("series s = p95(walkingSpeed)\nalert a { when s > 25 % }", "unit-mismatch"),
        ("series s = p95(walkingSpeed)\nalert a { when s + 7 d > 1 m/s }", "unit-mismatch"),
        ("series s = p95(walkingSpeed)\nalert a { when s > 1 parsecs }", "unknown-unit"),
        ("alert a { when walkingSpeed > 1 m/s }", "type-mismatch"),
        ("alert a { when speeed > 1 m/s }", "undefined-name"),
        ("alert a { when mean(walkingSpeed, 7 d) > 1 m/s }", "argument-mismatch"),
        ("series s = p95(walkingSpeed)\nalert a { when mean(s, 7 d, minimum: 3) > 1 m/s }", "unknown-argument"),
        ("series s = p95(walkingSpeed)\nalert a { when mean(s, 2.5 d) > 1 m/s }", "invalid-duration"),
        ("series s = p95(walkingSpeed)\nalert a { when mean(s, 7 m) > 1 m/s }", "invalid-duration"),
        ("alert a { when avg(1) > 1 }", "unknown-function"),
        ("alert a { when value > 1 m/s }", "sample-context"),
        ("alert a { on sample walkingSpeed\n when mean(value, 7 d) > 1 m/s }", "sample-context"),
        ("alert a { when days_since(sprain) > 3 d }", "undefined-name"),
        ("alert a { severity info }", "missing-when"),
        ("alert a { when true\n when false }", "duplicate-clause"),
        ("alert a { when true }\nalert a { when true }", "duplicate-name"),
        ("series s = s", "recursive-definition"),
        ("alert a { when true\n inhibited_by a }", "inhibition-cycle"),
        ("alert a { when true\n summary \"{nope}\" }", "invalid-template"),
        ("alert a { when 1 m/s }", "type-mismatch"),
        ("alert a { when true\n for 3 }", "invalid-duration"),
        ("alert a { when \"x\" }", "type-mismatch"),
        ("alert a { when 1 @ 2 }", "unexpected-character"),
        ("alert a { summary \"open }", "unterminated-string")
    ])
    func reportsTheRightDiagnostic(text: String, id: String) {
        let got = ids(text)
        #expect(got.contains(id), "got \(got)")
    }

    @Test(arguments: [
        "series s = p95(walkingSpeed)\nalert a { when s > 2.2 mph }",
        "series s = percentile(walkingSpeed, 90, method: nearest)\nalert a { when s >= 0.5 m/s or s < 150 cm/s }",
        "series d = median(walkingDoubleSupportPercentage)\nalert a { when slope(d, 14 d) > 0.1 %/d }",
        "series v = max(vo2Max)\nalert a { when v < 20 ml/kg/min }",
        "series s = p95(walkingSpeed)\nalert a { when s / mean(s, 30 d, before: injury) < 90 % and days_since(injury) <= 60 d }",
        "series s = p95(walkingSpeed)\nalert a { when change(s, 14 d) < -0.1 m/s and not annotated(heat_wave, within: 7 d) }",
        "event kinds knee_replacement\nseries s = p95(walkingSpeed)\nalert a { when days_since(knee_replacement) > 10 d }",
        "alert a { on sample sixMinuteWalkTestDistance where device_recorded\n when metadata(\"HKAppleDeviceCalibrated\") == 0 and starts_with(bundle_id, \"com.apple\") }",
        "series s = count(walkingSpeed)\nalert a { when missing_days(s) >= 3 d and days_with_data(s, 7 d) < 4 d }"
    ])
    func acceptsValidRules(text: String) {
        let r = Checker.check(text: text)
        #expect(r.program != nil, "\(r.diagnostics.map(\.message))")
    }

    @Test func literalsAreNormalisedToSI() throws {
        let p = try #require(Checker.check(text: "series s = p95(walkingSpeed)\nalert a { when s > 2.2 mph }").program)
        guard case .binary(.gt, _, .number(let v)) = p.alerts[0].condition else { Issue.record("shape"); return }
        #expect(abs(v - 2.2 * 0.44704) < 1e-12)
    }

    @Test func inhibitorsComeFirst() throws {
        let p = try #require(Checker.check(text: "alert late { when true\n inhibited_by early }\nalert early { when true }").program)
        #expect(p.alerts.map(\.name) == ["early", "late"])
        #expect(p.alerts[1].inhibitedBy == [0])
    }

    @Test func shippedRulesCheck() {
        let (sources, errors) = RuleSet.load([RepoPaths.rules])
        #expect(errors.isEmpty)
        let r = Checker.check(sources)
        #expect(r.program != nil, "\(r.diagnostics.map(\.message))")
        #expect(r.diagnostics.filter { $0.severity == .error }.isEmpty)
    }
}

/// One diagnostic per cause: no cascade from an error already reported.
@Suite struct DiagnosticCascadeTests {
    @Test(arguments: [
        ("series a = mean(a, 7 d)\nalert x {\n  when a > 1 m/s\n}\n", ["recursive-definition"]),
        ("alert y {\n  let b = mean(nosuch, 7 d)\n  when b > 1 m/s\n}\n", ["undefined-name"]),
        ("alert y {\n  let b = p95(walkingSpeed) + 2 %\n  let c = b + 1 m/s\n  when c > 1 m/s\n}\n", ["unit-mismatch"]),
        ("series p = p101(walkingSpeed)\nalert z {\n  when p > 1 m/s\n}\n", ["unknown-function"]),
        ("series p = p101(walkingSpeed, nosuch)\nalert z {\n  when p > 1 m/s\n}\n", ["unknown-function", "undefined-name"])  // two causes
    ])
    func oneDiagnosticPerCause(text: String, expected: [String]) {
        #expect(ids(text) == expected, "\(Checker.check(text: text).diagnostics.map(\.message))")
    }
}

/// Inputs the rules fuzzer (scripts/fuzz.sh rules) once crashed on, kept as regressions: each
/// must check and render without trapping.
@Suite struct FuzzRegressionTests {
    static let directory = RepoPaths.root + "/Tests/RuleLanguageTests/FuzzCrashes"

    @Test func everyRecordedCrashChecksAndRenders() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.directory).filter { $0.hasSuffix(".rules") }
        #expect(!files.isEmpty)
        for name in files {
            let bytes = try #require(FileManager.default.contents(atPath: Self.directory + "/" + name))
            // The fuzzer's view: raw bytes, invalid UTF-8 replaced.
            let src = SourceFile(path: name, text: String(decoding: bytes, as: UTF8.self))
            let (_, diagnostics) = Checker.check([src])
            #expect(!DiagnosticRenderer(files: [src]).render(diagnostics).isEmpty, "\(name)")
        }
    }
}
