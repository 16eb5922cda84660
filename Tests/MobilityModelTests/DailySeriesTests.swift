import MobilityModel
import Testing

/// A user-day's series message: its JSON and back.
@Suite struct DailySeriesTests {
    @Test func roundTripsInTheRulesOrderWithMissingValues() throws {
        let day = CivilDate(year: 2026, month: 3, day: 5)
        let s = DailySeries(user: "jamie", day: day, revised: true, values: [("speed_p95", 1.3123456789, "m/s"), ("ds_7d", nil, "%")])
        #expect(
            s.json
                == #"{"user":"jamie","day":"2026-03-05","revised":true,"series":{"speed_p95":{"value":1.312346,"unit":"m/s"},"ds_7d":{"value":null,"unit":"%"}}}"#
        )
        let back = try #require(DailySeries.parse(Array(s.json.utf8)))
        #expect(back.values.map(\.name) == ["speed_p95", "ds_7d"] && back.values[1].value == nil && back.revised)
        #expect(back.points.map(\.name) == ["speed_p95", "ds_7d"] && back.points.allSatisfy { $0.day == day && $0.revised })
        #expect(DailySeries.parse(Array(#"{"user":"u","day":"2026-03-05","series":{"x":{"value":"1","unit":""}}}"#.utf8)) == nil)
        #expect(DailySeries.parse(Array(#"{"user":"u","day":"2026-3-5","series":{}}"#.utf8)) == nil)
    }
}
