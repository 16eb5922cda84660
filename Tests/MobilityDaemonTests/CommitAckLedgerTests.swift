import Testing

@testable import MobilityDaemon

/// Which commit acknowledgements the publisher still owes the broker.
@Suite struct CommitAckLedgerTests {
    @Test func theLatestOfATopicSupersedesAndIsDueOnEveryNewConnectionUntilAnswered() {
        var l = CommitAckLedger()
        let first = l.latest(topic: "a", payload: [1])
        l.sent(topic: "a", serial: first, connection: 1)
        let second = l.latest(topic: "a", payload: [2])
        #expect(l.due(connection: 1).map(\.entry.payload) == [[2]])  // the replacement is not sent yet
        l.sent(topic: "a", serial: second, connection: 1)
        #expect(l.due(connection: 1).isEmpty)
        #expect(l.due(connection: 2).map(\.entry.payload) == [[2]])  // the connection dropped before the answer
        l.settled(topic: "a", serial: first)  // an answer to the replaced one settles nothing
        #expect(l.count == 1)
        l.settled(topic: "a", serial: second)
        #expect(l.count == 0)
        #expect(l.due(connection: 3).isEmpty)
    }
}
