import Foundation
import RuleLanguage
import Testing

/// The diagnostic catalogue: ids tied to messages, documented, covered by goldens;
/// notes with their own location; "did you mean" as fix-its.
@Suite struct DiagnosticCatalogueTests {
    static let testDir = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    static let root = testDir.deletingLastPathComponent().deletingLastPathComponent()

    @Test func everyIDAppearsInAGoldenFile() throws {
        let dir = Self.testDir.appendingPathComponent("Golden").path
        let expected = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".expected") }
        var text = ""
        for f in expected { text += try String(contentsOfFile: dir + "/" + f, encoding: .utf8) }
        let missing = DiagnosticID.allCases.filter { !text.contains("[\($0.rawValue)]") }.map(\.rawValue)
        #expect(missing.isEmpty, "ids without a golden case: \(missing)")
    }

    @Test func theReferenceListsExactlyTheCatalogue() throws {
        let doc = try String(contentsOf: Self.root.appendingPathComponent("docs/rule-language.md"), encoding: .utf8)
        let section = doc.components(separatedBy: "## Diagnostics").dropFirst().first?.components(separatedBy: "\n## ").first ?? ""
        let listed = section.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("| `"), let end = line.dropFirst(3).firstIndex(of: "`") else { return nil }
            return String(line[line.index(line.startIndex, offsetBy: 3)..<end])
        }
        #expect(listed == DiagnosticID.allCases.map(\.rawValue), "docs/rule-language.md lists \(listed)")
    }

    @Test func theCatalogueIsAlphabetical() throws {
        let ids = DiagnosticID.allCases.map(\.rawValue)
        #expect(ids == ids.sorted())
        let source = try String(contentsOf: Self.root.appendingPathComponent("Sources/RuleLanguage/DiagnosticCatalogue.swift"), encoding: .utf8)
        for block in source.components(separatedBy: "package enum ").dropFirst() {
            let body = block.components(separatedBy: "    /// The ").first ?? block
            let names = body.split(separator: "\n").compactMap { line -> String? in
                guard line.hasPrefix("    case ") else { return nil }
                return String(line.dropFirst(9).prefix { $0.isLetter || $0.isNumber })
            }
            #expect(names == names.sorted(), "enum \(block.prefix { $0 != ":" }) is not alphabetical: \(names)")
        }
    }

    @Test func anUnknownSeverityAndAReservedLabelHaveTheirOwnIDs() {
        let severity = Checker.check(text: "alert a {\n  when true\n  severity urgent\n  headline \"a\"\n}\n").diagnostics.map(\.id)
        #expect(severity == [.unknownSeverity])
        let label = Checker.check(text: "alert a {\n  when true\n  labels { rule = \"x\" }\n  headline \"a\"\n}\n").diagnostics.map(\.id)
        #expect(label == [.reservedLabel])
    }

    @Test func aDuplicateNamePointsAtTheFirstDefinitionInItsOwnFile() throws {
        let a = SourceFile(path: "a.rules", text: "alert x {\n  when true\n  headline \"x\"\n}\n")
        let b = SourceFile(path: "b.rules", text: "\n  alert x { when false }\n")
        let d = try #require(Checker.check([a, b]).diagnostics.first)
        #expect(d.id == .duplicateName)
        #expect(d.notes == [Note(message: .firstDefinedHere, range: SourceRange(file: 0, 6..<7))])
        let out = DiagnosticRenderer(files: [a, b]).render(d)
        #expect(
            out == """
                b.rules:2:9: error: alert 'x' is already defined [duplicate-name]
                      alert x { when false }
                            ^
                a.rules:1:7: note: first defined here
                    alert x {
                          ^

                """)
    }

    @Test(arguments: [
        ("alert a { when walkingSped > 1 m/s }", "walkingSped", "walkingSpeed"),
        ("alert a { when p95(walkingSpeed) > 1 m/ss }", "m/ss", "m/s"),
        ("alert a { when true\n  sevrity info }", "sevrity", "severity"),
        ("alert a { when meen(walkingSpeed) > 1 m/s }", "meen", "mean"),
        ("series s = mean(walkingSpeed)\nalert a { when s > 1 m/s\n summary \"{ ss } now\" }", "ss", "s")
    ])
    func didYouMeanIsAFixItOnTheMisspeltText(text: String, misspelt: String, replacement: String) throws {
        let src = SourceFile(path: "t.rules", text: text)
        let diags = Checker.check([src]).diagnostics
        let fix = try #require(diags.flatMap(\.fixIts).first, "\(diags.map(\.message))")
        #expect(fix.replacement == replacement)
        #expect(src.text(fix.range.range) == misspelt)
        #expect(DiagnosticRenderer(files: [src]).render(diags).contains("    note: did you mean '\(replacement)'?\n"))
    }
}
