import EngineTestSupport
import MobilityModel
import RuleLanguage
import Testing

@testable import Ingest
@testable import RuleEngine

/// Rejections of a batch carry the item's position, whichever stage refused it.
@Suite struct IngestorTests {
    @Test func everyRejectionInABatchHasItsIndex() {
        var ing = Ingestor(engine: Engine(program: program("series n = count(walkingSpeed)\n")), clock: .wall)
        let now = Timestamp(milliseconds: 1_780_000_000_000)
        func item(_ id: String, _ end: Timestamp, value: String = "1.1") -> String {
            "{\"id\":\"\(id)\",\"type\":\"walkingSpeed\",\"value\":\(value),\"unit\":\"m/s\",\"start\":\"\(end)\",\"end\":\"\(end)\"}"
        }
        let batch =
            "["
            + [
                item("future", now.adding(seconds: 3600)), item("bad", now, value: "\"x\""),
                item("late", now.adding(seconds: -30 * 86_400)), item("ok", now)
            ].joined(separator: ",") + "]"
        var out: [EngineOutput] = []
        ing.handle(topic: "mobility/v1/users/u/samples", payload: Array(batch.utf8), now: now, into: &out)
        let rejected = out.compactMap { o -> Rejection? in if case .rejected(_, _, let r) = o { return r } else { return nil } }
        #expect(rejected.map(\.reason) == [.inFuture, .invalidField, .tooLate])
        #expect(rejected.map(\.index) == [0, 1, 2])
        #expect(rejected.map(\.itemID) == ["future", "bad", "late"])
        #expect(rejected[0].json(user: "u", topic: "t").contains("\"index\":0"))
        #expect(ing.counters.samplesAccepted == 1)
    }

    /// A message's late samples are one refusal naming the first and how many (a gateway
    /// re-sending days long closed would otherwise be answered a refusal a sample), published
    /// after the message's other refusals; the metric still counts every sample. One late sample
    /// alone is refused as before, without a count.
    @Test func aMessagesLateSamplesAreOneRefusalThatCountsThem() {
        var ing = Ingestor(engine: Engine(program: program("series n = count(walkingSpeed)\n")), clock: .wall)
        let now = Timestamp(milliseconds: 1_780_000_000_000)
        func item(_ id: String, _ end: Timestamp, value: String = "1.1") -> String {
            "{\"id\":\"\(id)\",\"type\":\"walkingSpeed\",\"value\":\(value),\"unit\":\"m/s\",\"start\":\"\(end)\",\"end\":\"\(end)\"}"
        }
        let late = (0..<20).map { item("late-\($0)", now.adding(seconds: -30 * 86_400 + Int64($0) * 60)) }
        let batch = "[" + (late[..<10] + [item("bad", now, value: "99")] + late[10...] + [item("ok", now)]).joined(separator: ",") + "]"
        var out: [EngineOutput] = []
        ing.handle(topic: "mobility/v1/users/u/samples", payload: Array(batch.utf8), now: now, into: &out)
        let rejected = out.compactMap { o -> Rejection? in if case .rejected(_, _, let r) = o { return r } else { return nil } }
        #expect(rejected.map(\.reason) == [.outOfRange, .tooLate])
        #expect(rejected.map(\.itemID) == ["bad", "late-0"])
        #expect(rejected.map(\.index) == [10, 0])
        #expect(rejected.map(\.count) == [1, 20])
        let json = rejected[1].json(user: "u", topic: "t")
        #expect(json.contains("\"count\":20") && json.contains("\"detail\":\"20 samples of the message are too late; the first: sample ends at"), "\(json)")
        #expect(!rejected[0].json(user: "u", topic: "t").contains("count"))
        #expect(ing.counters.rejected == [.tooLate: 20, .outOfRange: 1])
        #expect(ing.counters.samplesAccepted == 1)

        out = []
        ing.handle(topic: "mobility/v1/users/u/samples", payload: Array(("[" + late[3] + "," + item("ok2", now) + "]").utf8), now: now, into: &out)
        let one = out.compactMap { o -> Rejection? in if case .rejected(_, _, let r) = o { return r } else { return nil } }
        #expect(one.map(\.count) == [1])
        #expect(one.map(\.index) == [0])
        #expect(!one[0].json(user: "u", topic: "t").contains("count"))
    }
}
