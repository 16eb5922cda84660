import EngineTestSupport
import MobilityModel
import RuleLanguage
import TestSupport
import Testing

@testable import RuleEngine

/// The words and days of transitions: headlines per kind, fallbacks, choices, units in words, the
/// 120-character bound, and the local days every view shows.
@Suite struct TransitionTextTests {
    static let rules = """
        series speed = p95(walkingSpeed)
        alert slow {
          let recent = mean(speed, 3 d, min: 2)
          let gap = missing_days(speed)
          let low = recent < 1 m/s
          when low
          for 2 d
          repeat 2 d
          headline "Slow since {since} (fired {fired}): {recent in mph:.1f}, {low ? 'under 2.2 mph' : 'not under it'}"
          headline resolved "Fast again: {recent in mph:.1f|too few days to say}, no data for {gap in d:.0f}"
          details "{recent in m/s:.2f|missing} over {gap}; {recent ? 'known' : 'not known'}"
        }
        """

    @Test func eachKindHasItsHeadlineWithValuesInWordsAndUnits() {
        // Slow on 01-02 to 01-06 (the 3-day mean known from 01-03), then fast: active since 01-03,
        // fires on 01-04 (for 2 d), reminds on 01-06, resolves on 01-08 (mean 1.17 m/s).
        let out = dailyOutputs(Self.rules, [0.5, 0.5, 0.5, 0.5, 0.5, 1.5, 1.5, 1.5])
        let a = out.alerts
        #expect(a.map { "\($0.isRepeat ? "repeat" : $0.status.rawValue) \($0.day)" } == ["firing 2026-01-04", "repeat 2026-01-06", "resolved 2026-01-08"])
        #expect(a[0].headline == "Slow since 2026-01-03 (fired 2026-01-04): 1.1 mph, under 2.2 mph")
        #expect(a[1].headline == "Slow since 2026-01-03 (fired 2026-01-04): 1.1 mph, under 2.2 mph")  // a reminder uses the firing's
        #expect(a[2].headline == "Fast again: 2.6 mph, no data for 0 days")
        #expect(a[0].details == "0.50 m/s over 0 days; known")
        // The same local days in every transition of the instance.
        #expect(a.allSatisfy { $0.activeSinceDay == CivilDate(year: 2026, month: 1, day: 3) && $0.firedDay == CivilDate(year: 2026, month: 1, day: 4) })
        #expect(a[2].endedDay == CivilDate(year: 2026, month: 1, day: 8) && a[0].endedDay == nil)
        #expect(a[0].json.contains("\"activeSinceDay\":\"2026-01-03\",\"firedDay\":\"2026-01-04\""))
        #expect(a[2].json.contains("\"resolvedDay\":\"2026-01-08\""))
        #expect(a[0].json.contains("\"summary\":\"Slow since 2026-01-03"))  // the former field repeats the headline
    }

    @Test func anUnknownValueSaysWhatIsMissingNeverUnknown() throws {
        // The month's mean needs 30 days of data: unknown here, so its fallback (or the default) shows.
        let rules = """
            series speed = p95(walkingSpeed)
            alert slow {
              let recent = mean(speed, 3 d, min: 3)
              let other = mean(speed, 30 d, min: 30)
              when recent < 1 m/s
              headline "Slow: {recent in mph:.1f}, month {other in mph:.1f}, {other ? 'a month known' : 'under a month of data'}"
              details "month {other}"
            }
            """
        let a = dailyOutputs(rules, [0.5, 0.5, 0.5, 0.5]).alerts
        let fired = try #require(a.first)
        #expect(fired.headline == "Slow: 1.1 mph, month not enough data, under a month of data")
        #expect(fired.details == "month not enough data")
    }

    /// A daily rule's instants are local midnights: in Los Angeles an alert active since the
    /// start of 02-28 that fired at the end of 03-01 has the instants 02-28T08:00Z and 03-02T08:00Z.
    /// Its days are 02-28 and 03-01 in every view (before, one alert showed three dates).
    @Test func theDaysAreTheUsersLocalDaysNotTheInstantsInUTC() throws {
        let la = try #require(LocalCalendar(identifier: "America/Los_Angeles"))
        var engine = Engine(program: program(Self.rules))
        engine.setProfile(user: "jamie", calendar: la)
        var out: [EngineOutput] = []
        let first = CivilDate(year: 2026, month: 2, day: 27).dayNumber
        for k in 0..<4 {
            let t = la.startOfDay(first + DayNumber(k)).adding(seconds: 12 * 3600)
            let s = Sample(id: "j\(k)", metric: .walkingSpeed, value: 0.5, start: t, end: t)
            engine.ingest(s, user: "jamie", now: t, into: &out)
        }
        engine.advance(to: la.startOfDay(first + 4).adding(seconds: 3600), into: &out)
        let fired = try #require(out.alerts.first)
        #expect(fired.activeSince.description == "2026-02-28T08:00:00Z" && fired.firedAt.description == "2026-03-02T08:00:00Z")
        #expect(fired.activeSinceDay.description == "2026-02-28" && fired.firedDay.description == "2026-03-01" && fired.day.description == "2026-03-01")
        #expect(fired.headline.hasPrefix("Slow since 2026-02-28 (fired 2026-03-01)"))
    }

    @Test func aHeadlineLongerThanTheLimitIsCutAtAWord() {
        let long = TemplateText.oneLine(String(repeating: "word ", count: 40))
        #expect(long.count <= AlertTransition.headlineLimit && long.hasSuffix("…") && !long.hasSuffix(" …"))
        #expect(TemplateText.oneLine("two\nlines") == "two lines")
        #expect(TemplateText.oneLine("short") == "short")
    }

    @Test(
        arguments: [
            (1.0 * 86_400, "d", 0, "1 day"), (3.0 * 86_400, "d", 0, "3 days"), (14.0 * 86_400, "w", 0, "2 weeks"),
            (0.5 * 86_400, "d", 1, "0.5 days"), (0.44704, "mph", 1, "1.0 mph"), (0.074 / (7 * 86_400), "m/s/w", 3, "0.074 m/s a week"),
            (0.25, "%", 0, "25 %"), (2.0, "", 0, "2")
        ] as [(Double, String, Int, String)])
    func valuesRenderInTheirUnitsAndDurationsInWords(_ si: Double, _ unit: String, _ decimals: Int, _ text: String) throws {
        let u = try #require(unit.isEmpty ? MeasureUnit.one : MeasureUnit.rule(unit))
        #expect(TemplateText.quantity(si, unit: u, decimals: decimals) == text)
    }
}
