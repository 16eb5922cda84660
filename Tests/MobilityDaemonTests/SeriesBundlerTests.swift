import MobilityModel
import MobilityWire
import Testing

@testable import MobilityDaemon

/// One message per user-day: consecutive points of one user, day and revision go together.
@Suite struct SeriesBundlerTests {
    @Test func aUserDaysPointsBecomeOneMessage() throws {
        var b = SeriesBundler(layout: TopicLayout(root: "mobility/v1"))
        let d1 = CivilDate(year: 2026, month: 3, day: 5), d2 = CivilDate(year: 2026, month: 3, day: 6)
        var items: [(topic: String, payload: [UInt8])] = []
        for p in [
            SeriesPoint(user: "a", name: "s1", day: d1, value: 1, unit: "m/s"), SeriesPoint(user: "a", name: "s2", day: d1, value: nil, unit: "%"),
            SeriesPoint(user: "a", name: "s1", day: d2, value: 2, unit: "m/s"), SeriesPoint(user: "b", name: "s1", day: d2, value: 3, unit: "m/s"),
            SeriesPoint(user: "b", name: "s1", day: d2, value: 4, unit: "m/s", revised: true)
        ] {
            if let done = b.add(p) { items.append((done.topic, done.payload)) }
        }
        if let done = b.finish() { items.append((done.topic, done.payload)) }
        #expect(b.finish() == nil)
        #expect(items.map(\.topic) == ["mobility/v1/users/a/series", "mobility/v1/users/a/series", "mobility/v1/users/b/series", "mobility/v1/users/b/series"])
        let days = items.compactMap { DailySeries.parse($0.payload) }
        #expect(days.map(\.values.count) == [2, 1, 1, 1])
        #expect(days[0].values.map(\.name) == ["s1", "s2"] && days[0].day == d1)
        #expect(days.map(\.revised) == [false, false, false, true])
    }
}
