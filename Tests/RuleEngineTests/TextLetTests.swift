import EngineTestSupport
import MobilityModel
import RuleLanguage
import Testing

@testable import RuleEngine

/// A `let` bound to a text value (`bundle_id`) is usable in conditions, summaries and evidence
/// (it was always unknown).
@Suite struct TextLetTests {
    static let rules = """
        alert via_let {
          on sample sixMinuteWalkTestDistance
          let src = bundle_id
          let clinic = starts_with(src, "org.")
          when src == "org.clinic"
          summary "from {src}, clinic {clinic}"
        }
        alert direct {
          on sample sixMinuteWalkTestDistance
          when bundle_id == "org.clinic"
        }
        """

    func run(bundle: String?) -> [AlertTransition] {
        var engine = Engine(program: program(Self.rules))
        var out: [EngineOutput] = []
        var s = sample("w1", .sixMinuteWalkTestDistance, 420, day: 1)
        s.bundleId = bundle
        engine.ingest(s, user: "u", now: close(1), into: &out)
        return out.alerts
    }

    @Test func aTextLetFiresLikeTheFieldItNames() throws {
        let alerts = run(bundle: "org.clinic")
        #expect(alerts.map(\.rule).sorted() == ["direct", "via_let"])
        let a = try #require(alerts.first { $0.rule == "via_let" })
        #expect(a.details == "from org.clinic, clinic yes")
        #expect(a.json.contains("\"src\":{\"value\":\"org.clinic\",\"unit\":\"\"}"), "\(a.json)")
        #expect(AlertTransition.parse(Array(a.json.utf8))?.evidence.first { $0.name == "src" }?.text == "org.clinic")
    }

    @Test func anotherSourceDoesNotFire() {
        #expect(run(bundle: "com.apple.health.x").isEmpty)
    }
}
