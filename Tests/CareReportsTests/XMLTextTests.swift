import Testing

@testable import CareReports

/// Text escaping for the pages' markup.
@Suite struct XMLTextTests {
    @Test func everyMarkupCharacterIsEscaped() throws {
        let t = try XMLTree("<p a=\"\(XMLText.escape("<&\"'>"))\">\(XMLText.escape("a < b & c > d \u{0}\u{8}"))</p>")
        #expect(t.root.attributes["a"] == "<&\"'>")
        #expect(t.root.allText == "a < b & c > d \u{FFFD}\u{FFFD}")
        #expect(XMLText.escape("plain text, ünïcode ✓") == "plain text, ünïcode ✓")
    }
}
