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

/// The day's series written as bytes (what mobilityd publishes) against the `String` path it
/// replaced, on the edges: escapes and non-ASCII in names and units, missing values, integers,
/// negative zero, values that round to 0 or overflow the 1e-6 rounding, no series at all.
@Suite struct DailySeriesBytesTests {
    static let cases: [DailySeries] = [
        DailySeries(
            user: "jamie", day: CivilDate(year: 2026, month: 3, day: 5), revised: true, values: [("speed_p95", 1.3123456789, "m/s"), ("ds_7d", nil, "%")]),
        DailySeries(user: "jamie", day: CivilDate(year: 2026, month: 3, day: 5)),
        DailySeries(
            user: "zoë \"q\" \\ 😀", day: CivilDate(year: 1, month: 12, day: 31),
            values: [("naïve\nname", 3, "m/s"), ("tab\t\u{1}", -0.0, ""), ("日本", -2.5e-7, "µ"), ("big", 1e300, "count"), ("int", 1e14, "%")]),
        DailySeries(user: "u", day: CivilDate(year: 9999, month: 1, day: 1), values: [("x", 4.9999995e-7, "m"), ("y", -123_456.7890125, "s"), ("z", 1e-7, "s")])
    ]

    @Test(arguments: cases)
    func writesTheStringPathsBytes(_ s: DailySeries) throws {
        #expect(s.jsonBytes == Array(s.legacyJSON.utf8))
        #expect(s.json == s.legacyJSON)
        var appended = Array("prefix".utf8)
        s.appendJSON(to: &appended)
        #expect(appended == Array("prefix".utf8) + s.jsonBytes)
        let back = try #require(DailySeries.parse(s.jsonBytes))
        #expect(back.user == s.user && back.day == s.day && back.values.map(\.name) == s.values.map(\.name))
    }

    @Test func writesTheDocumentedBytes() {
        #expect(
            String(decoding: Self.cases[0].jsonBytes, as: UTF8.self)
                == #"{"user":"jamie","day":"2026-03-05","revised":true,"series":{"speed_p95":{"value":1.312346,"unit":"m/s"},"ds_7d":{"value":null,"unit":"%"}}}"#
        )
        #expect(String(decoding: Self.cases[1].jsonBytes, as: UTF8.self) == #"{"user":"jamie","day":"2026-03-05","series":{}}"#)
    }
}
