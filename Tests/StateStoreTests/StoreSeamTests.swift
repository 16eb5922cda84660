import Foundation
import TestSupport
import Testing

/// The store is written against the engine's snapshot type only: each StateStore file imports
/// RuleEngine through scoped imports of ``UserSnapshot`` and the value types it holds, so that
/// `UserState`, `Engine` and the rest of the engine cannot even be named there (the compiler
/// enforces it; this test keeps the import list from growing back), and the target does not
/// depend on RuleLanguage.
@Suite struct StoreSeamTests {
    static let allowed: Set<String> = [
        "import struct RuleEngine.UserSnapshot", "import struct RuleEngine.StoredValue", "import struct RuleEngine.SampleID",
        "import struct RuleEngine.SyncEntry", "import struct RuleEngine.AlertStateMachine", "import struct RuleEngine.Tombstone"
    ]

    @Test func theStoreImportsOnlyTheSnapshotTypesOfTheEngine() throws {
        let dir = RepoPaths.root + "/Sources/StateStore"
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".swift") }
        #expect(files.count >= 5)
        var engineImports = 0
        for f in files {
            let text = try String(contentsOfFile: dir + "/" + f, encoding: .utf8)
            for line in text.split(separator: "\n") {
                let l = line.trimmingCharacters(in: .whitespaces)
                guard l.contains("import"), l.contains("RuleEngine") || l.contains("RuleLanguage") else { continue }
                #expect(StoreSeamTests.allowed.contains(l), "\(f): \(l)")
                engineImports += 1
            }
        }
        #expect(engineImports > 0)
        let manifest = try String(contentsOfFile: RepoPaths.root + "/Package.swift", encoding: .utf8)
        let target = try #require(manifest.split(separator: "\n").first { $0.contains(".target(name: \"StateStore\"") })
        #expect(!target.contains("RuleLanguage"), "\(target)")
    }
}
