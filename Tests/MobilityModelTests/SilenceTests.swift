import MobilityModel
import TestSupport
import Testing

/// Silence matching and validation: the regular expressions (anchored, linear time), matchers
/// (negation, absent labels), states and the bounds of a silence.
struct SilenceTests {
    @Test(arguments: [
        ("stalled_.*", "stalled_recovery", true), ("stalled_.*", "xstalled_recovery", false),  // anchored at both ends
        ("stalled", "stalled_recovery", false), ("a|b", "b", true), ("(?:jamie|alex)-[0-9]+", "alex-12", true),
        ("(?:jamie|alex)-[0-9]+", "alex-", false), ("^jamie$", "jamie", true), ("j.m\\.e", "jam.e", true), ("j.m\\.e", "jamxe", false),
        ("[^a-c]+", "xyz", true), ("[^a-c]+", "xaz", false), ("\\d+\\w*", "12ab_", true), ("colou?r", "color", true), ("(ab)+", "ababab", true),
        ("(ab)+", "", false), ("(a*)*", "", true), ("", "", true), ("", "x", false)
    ])
    func patternsMatchTheWholeValue(pattern: String, value: String, expected: Bool) throws {
        #expect(try LabelPattern(pattern).matches(value) == expected)
    }

    @Test(arguments: ["a{2}", "(a", "a)", "*a", "a**", "[a-", "[z-a]", "\\q", "(?i)a", "a^b", "a+?", String(repeating: "a", count: 257)])
    func unsupportedOrBadPatternsAreRefused(pattern: String) {
        #expect(throws: LabelPattern.SyntaxError.self) { _ = try LabelPattern(pattern) }
    }

    /// `(a+)+b` against 64 a's takes 2^64 steps with a backtracking engine; here it is one pass.
    @Test func matchingIsLinearInTheValue() throws {
        let p = try LabelPattern("(a+)+b")
        let start = ContinuousClock.now
        for _ in 0..<100 { #expect(!p.matches(String(repeating: "a", count: 64))) }
        #expect(ContinuousClock.now - start < .seconds(2))
    }

    @Test func matchersNegateAndTreatAbsentLabelsAsEmpty() throws {
        let labels = [("category", "recovery"), ("team", "physiotherapy")]
        func silence(_ m: [SilenceMatcher]) -> Silence {
            Silence(
                id: "x", team: "ward-a", matchers: m, startsAt: Timestamp(seconds: 0), endsAt: Timestamp(seconds: 10), createdBy: "kim", comment: "c")
        }
        let s = silence([try SilenceMatcher(name: "user", value: "jamie"), try SilenceMatcher(name: "rule", value: "stalled_.*", isRegex: true)])
        #expect(s.matches(user: "jamie", rule: "stalled_recovery", severity: .warning, labels: labels))
        #expect(!s.matches(user: "alex", rule: "stalled_recovery", severity: .warning, labels: labels))
        let not = silence([try SilenceMatcher(name: "category", value: "data-.*", isEqual: false, isRegex: true)])
        #expect(not.matches(user: "u", rule: "r", severity: .info, labels: labels))
        #expect(!not.matches(user: "u", rule: "r", severity: .info, labels: [("category", "data-quality")]))
        let absent = silence([try SilenceMatcher(name: "team", value: "physiotherapy", isEqual: false)])
        #expect(absent.matches(user: "u", rule: "r", severity: .info, labels: []))  // no team label: ""
        #expect(!absent.matches(user: "u", rule: "r", severity: .info, labels: labels))
        #expect(silence([try SilenceMatcher(name: "severity", value: "critical")]).matches(user: "u", rule: "r", severity: .critical, labels: []))
        #expect(s.state(at: Timestamp(seconds: -1)) == .pending && s.state(at: Timestamp(seconds: 0)) == .active)
        #expect(s.state(at: Timestamp(seconds: 9)) == .active && s.state(at: Timestamp(seconds: 10)) == .expired)
    }

    @Test func amtoolFormRoundTrips() throws {
        for text in ["user=jamie", "rule=~\"stalled_.*\"", "team!=x", "category!~\"data-.*\"", "user=\"a\\\"b\""] {
            let m = try SilenceMatcher.parse(text).get()
            #expect(try SilenceMatcher.parse(m.description).get() == m, "\(text) → \(m.description)")
        }
        let m = try SilenceMatcher.parse("category!~data-.*").get()
        #expect(m.name == "category" && m.value == "data-.*" && !m.isEqual && m.isRegex)
        for bad in ["jamie", "1x=a", "=a", "user=~a{2}"] {
            #expect(throws: LabelPattern.SyntaxError.self, "\(bad)") { _ = try SilenceMatcher.parse(bad).get() }
        }
    }

    @Test func validationNamesEachProblem() throws {
        let now = Timestamp(seconds: 1_000_000)
        let user = try SilenceMatcher(name: "user", value: "jamie")
        func check(_ m: [SilenceMatcher], starts: Int64 = 0, ends: Int64 = 3600, by: String = "kim", comment: String = "on leave") -> String? {
            Silence(
                id: "x", team: "ward-a", matchers: m, startsAt: now.adding(seconds: starts), endsAt: now.adding(seconds: ends), createdBy: by,
                comment: comment
            ).validate(labelNames: ["category", "team"], now: now)?.reason
        }
        #expect(check([user]) == nil)
        #expect(check([try SilenceMatcher(name: "category", value: "recovery")]) == nil)
        #expect(check([]) == "invalid_matcher")
        #expect(check([try SilenceMatcher(name: "user", value: ".*", isRegex: true)]) == "invalid_matcher")  // matches every alert
        #expect(check([try SilenceMatcher(name: "ward", value: "x")]) == "unknown_label")
        #expect(check(Array(repeating: user, count: 9)) == "too_many_matchers")
        #expect(check([user], starts: 100, ends: 50) == "ends_before_starts")
        #expect(check([user], starts: -100, ends: -50) == "ends_in_past")
        #expect(check([user], ends: 91 * 86_400) == "too_long")
        #expect(check([user], by: "") == "invalid_field")
        #expect(check([user], by: "a\nb") == "invalid_field")
        #expect(check([user], comment: "") == "invalid_field")
        #expect(check([user], comment: String(repeating: "x", count: 501)) == "invalid_field")
    }

    @Test func jsonRoundTripsAndIDsAreStable() throws {
        let m = [try SilenceMatcher(name: "user", value: "jamie"), try SilenceMatcher(name: "rule", value: "stalled_.*", isRegex: true)]
        let (a, b) = (Timestamp(seconds: 100), Timestamp(seconds: 200))
        let id = Silence.makeID(team: "ward-a", matchers: m, startsAt: a, endsAt: b, createdBy: "kim", comment: "c")
        #expect(id.count == 16 && id == Silence.makeID(team: "ward-a", matchers: m, startsAt: a, endsAt: b, createdBy: "kim", comment: "c"))
        #expect(id != Silence.makeID(team: "ward-b", matchers: m, startsAt: a, endsAt: b, createdBy: "kim", comment: "c"))
        let s = Silence(id: id, team: "ward-a", matchers: m, startsAt: a, endsAt: b, createdBy: "kim", comment: "c \"quoted\"")
        #expect(Silence.parse(Array(s.json(state: .active).utf8)) == s)
        #expect(s.json(state: .active).contains("\"status\":{\"state\":\"active\"}"))
    }

    @Test func alertPayloadCarriesSilencedBy() throws {
        var a = AlertTransition(
            id: "ab", rule: "r", user: "u", severity: .info, status: .firing, activeSince: Timestamp(seconds: 0), firedAt: Timestamp(seconds: 0),
            resolvedAt: nil, day: CivilDate(dayNumber: 0), headline: "", labels: [], evidence: [], annotations: [])
        #expect(!a.json.contains("silencedBy"))
        a.silencedBy = ["0123456789abcdef"]
        #expect(a.json.contains("\"silencedBy\":[\"0123456789abcdef\"]"))
        #expect(AlertTransition.parse(Array(a.json.utf8))?.silencedBy == ["0123456789abcdef"])
    }
}
