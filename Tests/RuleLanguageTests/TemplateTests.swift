import MobilityModel
import RuleLanguage
import TestSupport
import Testing

/// Headline and details templates as the checker reads them: what they accept, what they refuse
/// with which id, and that no text can crash them.
@Suite struct TemplateTests {
    static func check(_ clauses: String) -> (program: Program?, ids: [String]) {
        let text = """
            series speed = p95(walkingSpeed)
            alert a {
              let recent = mean(speed, 7 d, min: 4)
              let gap = missing_days(speed)
              let low = recent < 1 m/s
              when low
            \(clauses)
            }
            """
        let r = Checker.check(text: text)
        return (r.program, r.diagnostics.map(\.id.rawValue).filter { $0 != "unused-definition" })
    }

    @Test(
        arguments: [
            // accepted: a value then other words, a fallback, choices (nested, a quote doubled), the days
            ("headline \"{gap in d:.0f} without data, {recent in mph:.0f|none}\"", [String]()),
            ("headline \"{recent in mph:.1f} more than before\"", []),
            ("headline \"{low ? 'low ({recent in mph:.1f|?})' : '{gap ? 'a gap of {gap}' : 'fine'}'}\"", []),
            ("headline \"{low ? 'the patient''s pace' : 'fine'} since {since}, fired {fired}\"", []),
            ("headline \"{gap|why?}\"", []),
            // refused
            ("headline \"{gap in d:.0f} days\"", ["doubled-unit"]),
            ("headline \"{gap} d of no data\"", ["doubled-unit"]),
            ("headline \"{recent in m/s:.2f} m/s\"", ["doubled-unit"]),
            ("headline \"{low ? 'a' 'b'}\"", ["invalid-template"]),
            ("headline \"{low ? 'a' : 'b' extra}\"", ["invalid-template"]),
            ("headline \"{nope ? 'a' : 'b'}\"", ["invalid-template"]),
            ("headline \"{low ? 'a {nope}' : 'b'}\"", ["invalid-template"]),
            ("headline \"{recent in mph\"", ["invalid-template"]),
            ("headline \"" + String(repeating: "x", count: 115) + "{recent in mph:.1f}\"", ["headline-too-long"]),
            ("headline resolved \"a\"\n  headline resolved \"b\"\n  headline \"c\"", ["duplicate-clause"]),
            ("headline now \"a\"", ["expected-token", "missing-headline"]),
            ("details \"a\"\n  summary \"b\"\n  headline \"c\"", ["duplicate-clause"]),
            ("details \"{recent}\"", ["missing-headline"])
        ] as [(String, [String])])
    func clauses(_ clauses: String, _ ids: [String]) {
        let r = Self.check(clauses)
        #expect(r.ids == ids, "\(clauses)")
        #expect((r.program != nil) == !ids.contains { $0 != "missing-headline" })
    }

    /// A headline's bound: fixed text plus values of nominal width, the longest side of a choice.
    @Test func theBoundCountsNominalWidths() throws {
        let fits = "headline \"" + String(repeating: "x", count: 120 - 12) + "{recent in mph:.1f}\""  // "-123.4 mph" is 10, +2 to spare
        #expect(Self.check(fits).ids.isEmpty)
        let choice = "headline \"" + String(repeating: "x", count: 100) + "{low ? 'short' : '" + String(repeating: "y", count: 21) + "'}\""
        #expect(Self.check(choice).ids == ["headline-too-long"])
    }

    /// Random text in a template's alphabet never crashes the checker; what checks renders within
    /// the limits the checker promised (SplitMix64, seed printed on failure).
    @Test(arguments: [UInt64(1), 2, 3])
    func randomTemplatesNeverCrash(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        let alphabet = Array("{}{}''?:| .f1low gapin dmph")
        for _ in 0..<600 {
            let n = Int(rng.next() % 24)
            let body = String((0..<n).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] })
            let r = Self.check("headline \"\(body)\"\n  details \"\(body)\"")
            #expect(r.ids.allSatisfy { !$0.isEmpty }, "seed \(seed): \(body)")
        }
    }
}
