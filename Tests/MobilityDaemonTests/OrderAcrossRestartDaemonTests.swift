import Foundation
import MobilityModel
import TestSupport
import Testing

/// mobilityd against a real mosquitto: a deletion that overtook its sample and a newer sync
/// version that came first still win after a restart, from the state in SQLite.
@Suite(.serialized) struct OrderAcrossRestartDaemonTests {
    @Test func aDeletionAndANewerVersionThatCameFirstSurviveARestart() throws {
        let broker = try MosquittoBroker()
        let state = TemporaryPath.make("mw-state")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let user = "order-u"
        let sync = { (v: Int) in "{\"HKMetadataKeySyncIdentifier\":\"K\",\"HKMetadataKeySyncVersion\":\(v)}" }
        var daemon = try DaemonUnderTest(broker: broker, clientID: "mobilityd-order", state: state)
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        // The deletion is the user's first message; then version 2 of K.
        try pub.publish("mobility/v1/users/\(user)/deletions", "{\"ids\":[\"gone\"]}")
        try pub.publish(samplesTopic(user), sampleJSON(id: "v2", value: 1.5, end: "2026-03-01T10:00:00Z", metadata: sync(2)))
        #expect(daemon.waitProcessed(2))
        #expect(daemon.process.stop() == 0)

        daemon = try DaemonUnderTest(broker: broker, clientID: "mobilityd-order", state: state)
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/\(user)/series"])
        try pub.publish(samplesTopic(user), sampleJSON(id: "gone", value: 0.4, end: "2026-03-01T11:00:00Z"))
        try pub.publish(samplesTopic(user), sampleJSON(id: "v1", value: 0.6, end: "2026-03-01T12:00:00Z", metadata: sync(1)))
        try pub.publish(samplesTopic(user), sampleJSON(id: "kept", value: 1.1, end: "2026-03-01T13:00:00Z"))
        // The next day's sample closes 1 March.
        try pub.publish(samplesTopic(user), sampleJSON(id: "next", value: 1.2, end: "2026-03-02T12:00:00Z"))
        #expect(eventually { rec.messages().contains { $0.payload.count > 2 && String(decoding: $0.payload, as: UTF8.self).contains("2026-03-01") } })
        let day = try #require(rec.messages().first { String(decoding: $0.payload, as: UTF8.self).contains("\"day\":\"2026-03-01\"") })
        let series = try JSONValue.parse(day.payload).get()["series"]
        #expect(series?["speed_samples"]?["value"] == .number(2), "only v2 and kept: \(String(decoding: day.payload, as: UTF8.self))")
        #expect(daemon.metric("mobilityd_samples_deleted_before_arrival_total") == 1)
        #expect(daemon.metric("mobilityd_samples_accepted_total") == 2)  // kept and next, in this run
        #expect(daemon.process.stop() == 0)
    }
}
