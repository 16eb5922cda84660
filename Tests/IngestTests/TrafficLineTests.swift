import EngineTestSupport
import Testing

@testable import Ingest
@testable import RuleEngine

/// The replay's envelope scan: which lines take the fast path, and what it finds in them.
@Suite struct TrafficLineTests {
    func scan(_ s: String) -> (topic: String, payload: String)? {
        let b = Array(s.utf8)
        return b.withUnsafeBufferPointer { p in
            TrafficLine.scan(p).map { (String(decoding: b[$0.topic], as: UTF8.self), String(decoding: b[$0.payload], as: UTF8.self)) }
        }
    }

    @Test func findsTopicAndPayloadOfTheUsualShapeWithAnyWhitespace() {
        #expect(scan(#"{"topic":"a/b","payload":{"x":1}}"#)! == ("a/b", #"{"x":1}"#))
        #expect(scan(" { \"topic\" : \"a/b\" ,\n\t\"payload\" : [1, 2] } \r")! == ("a/b", "[1, 2]"))
    }

    @Test(arguments: [
        #"{"topic":"a\/b","payload":{}}"#,  // an escape in the topic: the full parse unescapes it
        #"{"payload":{},"topic":"a/b"}"#,  // the other member order
        #"{"topic":"a/b","payload":"{}"}"#,  // a string payload is taken verbatim by the full parse
        #"{"topic":"a/b","payload":1}"#,
        #"{"topic":"a/b""#,
        #"["topic"]"#,
        ""
    ])
    func leavesEveryOtherShapeToTheFullParse(line: String) {
        #expect(scan(line) == nil)
    }

    @Test func theCompactEnvelopeAndItsSpacedSpellingsAgree() {
        // The compact shape takes a memcmp path of its own; whitespace anywhere sends a line
        // through the general scan. Both must find the same topic and payload, or both none.
        var rng = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: 0...UInt64.max, using: &rng)
        var state = seed
        func next(_ n: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(n))
        }
        let topics = ["mobility/v1/users/u1/samples", "a/b", "", "t\\/x", "tab\there"]
        let payloads = [#"{"id":"x"}"#, "[1,2]", "{}", "[]", "1", #""{}""#, "{", "[}"]
        for _ in 0..<500 {
            let t = topics[next(topics.count)], p = payloads[next(payloads.count)]
            let compact = #"{"topic":""# + t + #"","payload":"# + p + "}"
            let ws = [" ", "\t", "\n", "\r\n"]
            func w() -> String { next(2) == 0 ? "" : ws[next(ws.count)] }
            let spaced =
                w() + "{" + w() + #""topic""# + w() + ":" + w() + "\"" + t + "\"" + w() + "," + w() + #""payload""# + w() + ":" + w() + p + w() + "}" + w()
            let a = scan(compact), b = scan(spaced)
            #expect(a?.topic == b?.topic && a?.payload == b?.payload, "seed \(seed): \(compact) vs \(spaced)")
        }
        #expect(scan(#"{"topic":"a/b", "payload":{}}"#)! == ("a/b", "{}"))  // compact head, spaced middle
        #expect(scan(#"{"topic":"a/b","payload": {} }"#)! == ("a/b", "{}"))
        #expect(scan("{\"topic\":\"a\u{1}b\",\"payload\":{}}") == nil)  // a control character in the topic
    }

    @Test func aMissingClosingBraceLeavesAPayloadThatIsNotJSON() {
        // The scan only locates: the decoder refuses "{" as JSON, and the full parse then reports the line.
        #expect(scan(#"{"topic":"a/b","payload":{}"#)! == ("a/b", "{"))
    }

    @Test func shardsByEverythingBeforeTheLastSlash() {
        func shard(_ t: String) -> Int { Array(t.utf8).withUnsafeBufferPointer { TrafficLine.shard(ofTopic: $0, shards: 7) } }
        for u in ["a", "u12", "jamie-plateau"] {
            let s = shard("mobility/v1/users/\(u)/samples")
            #expect(shard("mobility/v1/users/\(u)/events") == s && shard("mobility/v1/users/\(u)/profile") == s)
        }
        #expect(Set((0..<50).map { shard("mobility/v1/users/u\($0)/samples") }).count > 3)
    }
}
