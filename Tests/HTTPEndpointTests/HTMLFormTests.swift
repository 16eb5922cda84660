import HTTPEndpoint
import Testing

/// Forms as browsers post them (`application/x-www-form-urlencoded`).
@Suite struct HTMLFormTests {
    @Test func fieldsAreDecoded() throws {
        let f = try HTMLForm(parsing: Array("note=seen+at+10%3A00&empty=&flag&csrf=ab%2Bc&note=second&u=%C3%BC".utf8))
        #expect(f.value("note") == "seen at 10:00")
        #expect(f.value("empty") == "")
        #expect(f.value("flag") == "")
        #expect(f.value("csrf") == "ab+c")
        #expect(f.value("u") == "ü")
        #expect(f.value("missing") == nil)
        #expect(f.fields.count == 6)
    }

    @Test(arguments: ["a=%", "a=%4", "a=%zz", "a=%ff%fe", String(repeating: "a=1&", count: 33)])
    func badFormsAreRefused(body: String) {
        #expect(throws: HTMLForm.Problem.self) { _ = try HTMLForm(parsing: Array(body.utf8)) }
    }
}
