import Foundation
import RuleLanguage
import Testing
import TestSupport

/// Golden files: `Golden/<case>.rules` beside `<case>.expected` (the rendered diagnostics).
/// Regenerate with `UPDATE_GOLDEN=1 swift test --filter GoldenTests` and review the diff.
@Suite struct GoldenTests {
    static let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden").path
    static let cases = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(".rules") }.sorted()

    @Test(arguments: cases)
    func diagnosticsMatchGolden(file: String) throws {
        let path = Self.dir + "/" + file
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let src = SourceFile(path: file, text: text)
        let (program, diags) = Checker.check([src])
        let rendered = DiagnosticRenderer(files: [src]).render(diags)
        let expectedPath = path.replacingOccurrences(of: ".rules", with: ".expected")
        if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] != nil {
            try rendered.write(toFile: expectedPath, atomically: true, encoding: .utf8)
        }
        let expected = try String(contentsOfFile: expectedPath, encoding: .utf8)
        #expect(rendered == expected)
        #expect((program == nil) == file.hasSuffix(".bad.rules"))
    }

    /// A missing or emptied folder would make the table above pass with zero cases.
    @Test func theGoldenFolderHoldsGoodAndBadCases() {
        #expect(Self.cases.contains { $0.hasSuffix(".good.rules") } && Self.cases.contains { $0.hasSuffix(".bad.rules") }, "\(Self.dir): \(Self.cases)")
    }
}
