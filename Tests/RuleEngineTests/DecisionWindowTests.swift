import EngineTestSupport
import MobilityModel
import RuleLanguage
import TestSupport
import Testing

@testable import RuleEngine

/// An alert names the days its decision read: `window` (its condition's windows, through lets and
/// series, cut at the segment start) and `baselineWindow` (its `before:` windows).
@Suite struct DecisionWindowTests {
    static let rules = """
        series d = mean(walkingSpeed)
        series d7 = mean(d, 7 d)
        alert low {
          let base = mean(d, 10 d, before: injury)
          let t = slope(d7, 5 d)
          when d7 < base - 0.1 m/s and is_known(t)
        }
        alert today {
          when d < 0.6 m/s
        }
        alert each {
          on sample walkingSpeed
          when value < 0.6 m/s
        }
        """

    /// Injury on day 20, 1.0 m/s until day 34, then 0.5 m/s.
    static func run(injury: Int = 20, days: Int = 40) -> [AlertTransition] {
        var engine = Engine(program: program(rules))
        var out: [EngineOutput] = []
        engine.record(
            event: TimelineEvent(id: "inj", category: .clinical, kind: "injury", firstDay: day0 + DayNumber(injury), lastDay: day0 + DayNumber(injury)),
            user: "u")
        for d in 1...days { engine.ingest(sample("s\(d)", d < 35 ? 1.0 : 0.5, day: d), user: "u", now: close(d), into: &out) }
        engine.advance(to: close(days), into: &out)
        return out.alerts
    }

    @Test func theFiringNamesItsWindowAndBaseline() throws {
        let low = try #require(Self.run().first { $0.rule == "low" && $0.status == .firing })
        // day 36: the 7-day mean (0.857) is below the baseline (1.0) by more than 0.1; the slope of
        // the 7-day mean over 5 days reaches 4 + 6 = 10 days back: days 26-36
        #expect(low.day == CivilDate(dayNumber: day0 + 36))
        #expect(low.window == AlertWindow(from: CivilDate(dayNumber: day0 + 26), to: CivilDate(dayNumber: day0 + 36)))
        #expect(low.window?.days == 11)
        // the 10 days before the injury on day 20
        #expect(low.baselineWindow == AlertWindow(from: CivilDate(dayNumber: day0 + 10), to: CivilDate(dayNumber: day0 + 19)))
        // published, and read back by consumers
        let back = try #require(AlertTransition.parse(Array(low.json.utf8)))
        #expect(back.window == low.window)
        #expect(back.baselineWindow == low.baselineWindow)
        #expect(low.json.contains("\"days\":11") || low.json.contains("\"days\": 11"))
    }

    @Test func theWindowIsCutAtTheSegmentStart() throws {
        // injury on day 33: on day 36 the windows reach back to day 26, but the segment starts on day 33
        let low = try #require(Self.run(injury: 33).first { $0.rule == "low" && $0.status == .firing })
        #expect(low.window?.from == CivilDate(dayNumber: day0 + 33))
        #expect(low.window?.to == low.day)
    }

    @Test func aConditionWithoutWindowsHasNone() throws {
        let alerts = Self.run()
        let today = try #require(alerts.first { $0.rule == "today" })
        #expect(today.window == nil && today.baselineWindow == nil)
        #expect(!today.json.contains("\"window\""))
        let each = try #require(alerts.first { $0.rule == "each" })
        #expect(each.window == nil && !each.json.contains("indow\""))
    }
}
