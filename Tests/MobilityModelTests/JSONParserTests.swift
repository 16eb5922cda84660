import MobilityModel
import TestSupport
import Testing

/// The tree parser: strict RFC 8259, bounded nesting, never a crash.
@Suite struct JSONParserTests {
    @Test func parserSurvivesRandomBytes() {
        var rng = SplitMix64(seed: 99)
        for _ in 0..<3000 {
            let n = Int.random(in: 0..<64, using: &rng)
            let alphabet = Array(#"{}[]",:0123456789.eE+-tfnrulasx\ "#.utf8) + [0xC3, 0xFF, 0x80]
            let bytes = (0..<n).map { _ in alphabet.randomElement(using: &rng)! }
            _ = JSONValue.parse(bytes)  // must not crash
        }
    }

    @Test func nestingDeeperThanTheLimitIsRefusedWithItsOffset() throws {
        let ok = String(repeating: "[", count: JSONValue.maxDepth) + String(repeating: "]", count: JSONValue.maxDepth)
        #expect((try? JSONValue.parse(ok).get()) != nil)
        let deep = "[" + ok + "]"
        guard case .failure(let e) = JSONValue.parse(deep) else { Issue.record("accepted"); return }
        #expect(e.offset == JSONValue.maxDepth && e.description.hasSuffix("at byte \(JSONValue.maxDepth)"))
    }

    @Test(arguments: ["", "01", "1.", "[1,]", "{\"a\"}", "\"\\x\"", "\"\u{1}\"", "tru", "1 2", "[1]x"])
    func notJSON(_ text: String) {
        #expect((try? JSONValue.parse(text).get()) == nil, "\(text)")
    }

    @Test func membersAreFoundByKeyTheFirstOfDuplicatesWinning() throws {
        let v = try JSONValue.parse(#"{"a":1,"b":{"c":null},"a":2}"#).get()
        #expect(v["a"] == .number(1) && v["b"]?["c"] == .null && v["z"] == nil)
    }
}
