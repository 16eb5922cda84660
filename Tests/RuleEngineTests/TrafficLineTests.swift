import Testing

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
