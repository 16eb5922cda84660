import Foundation
import Glibc
import TestSupport
import Testing

/// A batch whose only outputs are series does not commit at once; its series wait in
/// the outbox for the interval's commit (or go with the next commit of other outputs), are
/// published only once committed, and survive a crash meanwhile (the journal replays the day).
@Suite(.serialized) struct SeriesCommitTests {
    /// Four messages of one user; the fourth closes 2026-03-01 (event clock, UTC, 1 h grace).
    static let closingDay = [
        "2026-03-01T10:00:00Z", "2026-03-01T20:00:00Z", "2026-03-02T08:00:00Z", "2026-03-02T12:00:00Z"
    ].enumerated().map { k, end in sampleJSON(id: "sd-\(k)", value: 1.2, end: end) }

    @Test func seriesWaitForACommitAndSurviveACrash() throws {
        let broker = try MosquittoBroker()
        let state = TemporaryPath.make("mw-series-commit")
        defer { try? FileManager.default.removeItem(atPath: state) }
        // A long interval: nothing but another output (or a stop) commits the series here.
        let extra = ["--commit-interval", "60000", "--shards", "1"]
        var daemon = try DaemonUnderTest(broker: broker, state: state, extra: extra)
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/series/#", "mobility/v1/users/+/rejected"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        for s in Self.closingDay { try pub.publish(samplesTopic("sd"), s) }
        #expect(daemon.waitProcessed(4))
        #expect(try rec.barrier())
        // The day closed (its series are in the outbox), but nothing is committed or published yet.
        #expect(rec.messages().filter { $0.topic.hasSuffix("/series") }.isEmpty)
        #expect(daemon.metric("mobilityd_series_published_total") == 0)
        #expect(eventually { daemon.metric("mobilityd_outputs_uncommitted") == 1 }, "the day's series message waits")

        // A crash while the series wait: the restarted daemon replays the journal and closes the day again.
        daemon.process.signal(SIGKILL)
        _ = daemon.process.wait()
        daemon = try DaemonUnderTest(broker: broker, state: state, extra: extra)
        #expect(daemon.waitProcessed(4))
        #expect(daemon.metric("mobilityd_series_published_total") == 0)
        #expect(eventually { daemon.metric("mobilityd_outputs_uncommitted") == 1 })

        // A rejection is published at once, and takes the waiting series (and their user) along.
        try pub.publish(samplesTopic("other"), "{not json")
        #expect(daemon.waitProcessed(5))
        #expect(daemon.waitIdle())
        #expect(try rec.barrier())
        let series = rec.messages().filter { $0.topic == "mobility/v1/users/sd/series" }
        #expect(series.count == 1)
        #expect(series.first?.text.contains("\"day\":\"2026-03-01\"") == true, "\(series.map(\.text))")
        #expect(rec.messages().contains { $0.topic == "mobility/v1/users/other/rejected" })
        #expect(daemon.metric("mobilityd_series_published_total") == 1)
        #expect(daemon.metric("mobilityd_outputs_uncommitted") == 0)
        #expect(daemon.process.stop() == 0)
    }
}
