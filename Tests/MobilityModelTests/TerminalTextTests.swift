import MobilityModel
import Testing

/// Staff text's one check, and the escaping of stored text for a terminal.
@Suite struct TerminalTextTests {
    @Test(arguments: [
        ("plain", "plain"), ("a\u{1b}[2Jb", #"a\x1b[2Jb"#), ("two\nlines\r\tend", #"two\nlines\r\tend"#), ("c1\u{9b}31m", #"c1\x9b31m"#),
        ("del\u{7f}", #"del\x7f"#), ("\u{202e}rev\u{2066}", #"\u{202e}rev\u{2066}"#), ("ünïcödé — ok", "ünïcödé — ok")
    ])
    func escapedShowsEveryControlCharacter(_ input: String, _ expected: String) {
        #expect(TerminalText.escaped(input) == expected)
    }

    @Test func jsonKeepsTheValueAndTheWhitespaceBetweenTokens() throws {
        var w = JSONWriter()
        w.beginObject()
        w.string("note", "a\u{1b}b\u{9b}c\u{202e}d\u{7f}é")
        w.endObject()
        let safe = TerminalText.json(w.text)
        #expect(safe == #"{"note":"a\u001bb\u009bc\u202ed\u007fé"}"#)
        guard case .success(let v) = JSONValue.parse(Array(safe.utf8)), case .string(let note)? = v["note"] else {
            Issue.record("not JSON: \(safe)")
            return
        }
        #expect(note == "a\u{1b}b\u{9b}c\u{202e}d\u{7f}é")
        #expect(TerminalText.json("{\n\t\"a\": 1\n}") == "{\n\t\"a\": 1\n}")
    }

    @Test func staffTextRefusesControlCharactersAndBoundsTheLength() {
        #expect(StaffText.problem("called, physio Tuesday — ok", field: "'note'", maxBytes: 500, required: false) == nil)
        #expect(StaffText.problem("", field: "'note'", maxBytes: 500, required: false) == nil)
        #expect(StaffText.problem("", field: "'by'", maxBytes: 100, required: true) == "'by' is 1-100 bytes without control characters")
        #expect(StaffText.problem("a\u{9b}b", field: "'note'", maxBytes: 500, required: false) == "'note' is at most 500 bytes without control characters")
        #expect(StaffText.problem(String(repeating: "é", count: 51), field: "'by'", maxBytes: 100, required: true) != nil)
        for bad in ["\u{1b}", "\n", "\t", "\u{7f}", "\u{85}", "\u{9b}", "\u{0}"] { #expect(StaffText.hasControlCharacters("x" + bad)) }
    }
}
