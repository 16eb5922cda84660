import Foundation
import Ingest
import MobilityModel
import MobilityWire
import RuleEngine
import RuleLanguage
import TestSupport
import Testing

/// The decode stage in mobilityd against a real mosquitto: one user's large samples payloads
/// (decoded by the stage) interleaved with small messages whose effect depends on their order
/// (a deletion of a sample just sent, a payload that is not JSON) come out as an in-order run
/// of the same traffic gives: the same counters and the same rejections in the same order.
@Suite(.serialized) struct DecodeStageDaemonTests {
    static let user = "stage-u"

    /// Round k: 30 samples and one of an unknown type (≈ 6 KB, through the stage), a deletion of
    /// the round's last sample, and a payload that is not JSON (both small: straight to the
    /// shard unless the stage still holds the large one).
    static func traffic(rounds: Int) -> [(topic: String, payload: [UInt8])] {
        let layout = TopicLayout(root: "mobility/v1")
        let start = Timestamp(milliseconds: 1_772_323_200_000)  // 2026-03-01T00:00:00Z
        var out: [(String, [UInt8])] = []
        for k in 0..<rounds {
            var items = (0..<30).map { j in
                sampleJSON(id: "r\(k)-\(j)", value: 1.0 + Double(j) / 100, end: start.adding(seconds: Int64((k * 30 + j) * 20)).description)
            }
            items.append(sampleJSON(id: "r\(k)-bad", type: "noSuchType", value: 1, end: start.adding(seconds: Int64(k * 600)).description))
            out.append((layout.samples(user), Array(("[" + items.joined(separator: ",") + "]").utf8)))
            out.append((layout.deletions(user), Array("{\"ids\":[\"r\(k)-29\"]}".utf8)))
            out.append((layout.samples(user), Array("{\"id\":\"r\(k)-cut\"".utf8)))
        }
        return out
    }

    /// A rejection as `reason id` (the id of the refused item, `-` for none).
    static func summary(_ rejection: [UInt8]) -> String {
        guard case .success(let v) = JSONValue.parse(rejection), case .string(let reason)? = v["reason"] else { return "?" }
        if case .string(let id)? = v["id"] { return reason + " " + id }
        return reason + " -"
    }

    @Test func smallMessagesNeverOvertakeALargeOneInTheStage() throws {
        let rounds = 40
        let records = Self.traffic(rounds: rounds)
        #expect(records[0].payload.count >= 2048 && records[1].payload.count < 2048)
        // The in-order outcome: one ingestor, message after message.
        let program = try #require(Checker.check(RuleSet.load([RepoPaths.rules]).sources).program)
        var ingestor = Ingestor(engine: Engine(program: program), clock: .event, boundedByWallClock: true)
        var out: [EngineOutput] = []
        let wall = Timestamp(milliseconds: Int64(Date().timeIntervalSince1970 * 1000))
        for r in records { ingestor.handle(topic: r.topic, payload: r.payload, now: wall, into: &out) }
        let layout = TopicLayout(root: "mobility/v1")
        let expectedRejections: [[UInt8]] = out.compactMap { o in
            guard case .rejected(let u, let topic, let r) = o else { return nil }
            return r.jsonBytes(user: u, topic: topic)
        }
        let c = ingestor.counters
        #expect(c.deletions == rounds && c.deletedBeforeArrival == 0 && expectedRejections.count == 2 * rounds)

        let broker = try MosquittoBroker()
        let daemon = try DaemonUnderTest(broker: broker, clientID: "mobilityd-stage")
        let rec = try MQTTRecorder(url: broker.url, filters: [layout.rejected(Self.user)])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        for r in records { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
        #expect(daemon.waitProcessed(records.count, timeout: 60))
        #expect(daemon.waitIdle())
        #expect(try rec.barrier())  // every rejection has arrived
        let m = daemon.metrics()
        #expect(m["mobilityd_samples_accepted_total"] == Double(c.samplesAccepted))
        #expect(m["mobilityd_deletions_total"] == Double(c.deletions), "a deletion overtook its sample")
        #expect(m["mobilityd_samples_deleted_before_arrival_total"] == Double(c.deletedBeforeArrival))
        #expect(m["mobilityd_rejected_total{reason=\"unknown_type\"}"] == Double(rounds))
        #expect(m["mobilityd_rejected_total{reason=\"not_json\"}"] == Double(rounds))
        #expect(m["mobilityd_queue_depth{stage=\"decode\"}"] == 0)
        // In order: round k's unknown_type (its item r<k>-bad), then its not_json.
        let got = rec.messages().map(\.payload)
        #expect(got.map(Self.summary) == expectedRejections.map(Self.summary), "the rejections in another order than the messages'")
        if got.map(Self.summary) == expectedRejections.map(Self.summary) { #expect(got == expectedRejections) }
        #expect(daemon.process.stop() == 0)
    }
}
