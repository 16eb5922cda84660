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
}
