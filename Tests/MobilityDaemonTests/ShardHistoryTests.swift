import Foundation
import MobilityModel
import Simulator
import StateStore
import TestSupport
import Testing

@testable import MobilityDaemon

/// What a shard run in-process (``ShardHarness``) records in its history with series off the wire
/// or history off. (Against what a live daemon published on a broker: ``HistoryRecordingTests``.)
@Suite struct ShardHistoryTests {
    /// Series off MQTT are still in the history; with history off nothing is recorded.
    @Test(arguments: [(publishesSeries: false, historyDays: 90 as Int?), (publishesSeries: true, historyDays: nil)])
    func seriesOffTheWireOrNoHistory(_ options: (publishesSeries: Bool, historyDays: Int?)) throws {
        let story = BuiltinScenario.jamiePlateau, user = story.rawValue
        let records = story.generator(seed: 4).generate().map(\.record)
        let dir = TemporaryPath.make("mw-history")
        let h = try ShardHarness(dir: dir, historyDays: options.historyDays, publishesSeries: options.publishesSeries)
        h.send(bytes: records.map { ($0.topic, $0.payload) })
        h.stop()
        let alerts = h.published.messages(prefix: "mobility/v1/users/\(user)/alerts/").filter { !$0.payload.isEmpty }
        let series = h.published.messages(prefix: "mobility/v1/users/\(user)/series")
        #expect(!alerts.isEmpty, "alerts are published either way")
        let history = try StateStore(path: dir + "/state.sqlite").history(of: user, from: .min, through: .max)
        if options.historyDays == nil {
            #expect(!series.isEmpty)
            #expect(history == UserHistory(user: user))
        } else {
            #expect(series.isEmpty)
            #expect((history.series["speed_p95"]?.count ?? 0) >= 80, "days of speed_p95 recorded: \(history.series["speed_p95"]?.count ?? 0)")
            #expect(history.alerts.count >= 1)
        }
    }
}
