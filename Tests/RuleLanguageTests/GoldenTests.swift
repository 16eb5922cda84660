import Foundation
import RuleLanguage
import TestSupport
import Testing

/// Golden files: `Golden/<case>.rules` beside `<case>.expected` (the rendered diagnostics).
/// Regenerate with `UPDATE_GOLDEN=1 swift test --filter GoldenTests` and review the diff.
@Suite struct GoldenTests {
    static let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden").path
    static let cases = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(".rules") }.sorted()
    /// Inputs too large to keep in the repository, generated here; their `.expected` is golden.
    static let generated: [String: String] = [
        "file_too_large.bad": String(repeating: "# padding\n", count: RuleLimits.maxFileBytes / 10 + 1)
    ]

    /// Renders one input and compares it with (or, with `UPDATE_GOLDEN`, writes) its `.expected`.
    static func compare(_ name: String, text: String) throws {
        let src = SourceFile(path: name + ".rules", text: text)
        let (program, diags) = Checker.check([src])
        let rendered = DiagnosticRenderer(files: [src]).render(diags)
        let expectedPath = dir + "/" + name + ".expected"
        if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] != nil {
            try rendered.write(toFile: expectedPath, atomically: true, encoding: .utf8)
        }
        let expected = try String(contentsOfFile: expectedPath, encoding: .utf8)
        #expect(rendered == expected)
        #expect((program == nil) == name.hasSuffix(".bad"))
    }

    @Test(arguments: cases)
    func diagnosticsMatchGolden(file: String) throws {
        let text = try String(contentsOfFile: Self.dir + "/" + file, encoding: .utf8)
        try Self.compare(String(file.dropLast(".rules".count)), text: text)
    }

    @Test(arguments: generated.keys.sorted())
    func generatedInputMatchesGolden(name: String) throws {
        try Self.compare(name, text: Self.generated[name]!)
    }

    /// A missing or emptied folder would otherwise pass with zero cases.
    @Test func goldenFolderHasCases() throws {
        var isDir: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: Self.dir, isDirectory: &isDir) && isDir.boolValue, "no folder \(Self.dir)")
        #expect(Self.cases.count >= 2, "golden cases: \(Self.cases)")
        #expect(Self.cases.contains { $0.hasSuffix(".good.rules") } && Self.cases.contains { $0.hasSuffix(".bad.rules") })
        for c in Self.cases {
            let expected = Self.dir + "/" + c.dropLast(".rules".count) + ".expected"
            #expect(FileManager.default.fileExists(atPath: expected), "\(c) has no .expected")
        }
    }

    /// A missing or emptied folder would make the table above pass with zero cases.
    @Test func theGoldenFolderHoldsGoodAndBadCases() {
        #expect(Self.cases.contains { $0.hasSuffix(".good.rules") } && Self.cases.contains { $0.hasSuffix(".bad.rules") }, "\(Self.dir): \(Self.cases)")
    }
}
