/// Each user's latest commit acknowledgement until the broker has answered a publish of it.
///
/// A commit acknowledgement is not in the store's outbox (that would add a store write and a
/// delete per acknowledgement); it is retained and the latest per user supersedes the rest, so
/// the publisher keeps only the latest per topic in memory. One published on a connection that
/// then dropped before the broker answered, or not published at all (disconnected, too many in
/// flight), is due again on the next connection: ``due(connection:)`` names it until the broker
/// answers (accepts or refuses) the publish of that acknowledgement.
struct CommitAckLedger {
    struct Entry: Equatable {
        var payload: [UInt8]
        /// Which acknowledgement of the topic this is (an answer to an earlier one does not settle it).
        var serial: UInt64
        /// The publisher connection (its ``MQTTClient/connectionCount``) it was last published on; nil: not yet.
        var sentOn: Int?
    }
    /// By acks topic.
    private(set) var entries: [String: Entry] = [:]
    private var nextSerial: UInt64 = 0

    /// Records `payload` as the latest acknowledgement on `topic` (replacing any earlier one, sent
    /// or not); returns its serial.
    mutating func latest(topic: String, payload: [UInt8]) -> UInt64 {
        nextSerial += 1
        entries[topic] = Entry(payload: payload, serial: nextSerial, sentOn: nil)
        return nextSerial
    }

    /// Acknowledgement `serial` of `topic` was handed to the client on connection `connection`.
    mutating func sent(topic: String, serial: UInt64, connection: Int) {
        if entries[topic]?.serial == serial { entries[topic]?.sentOn = connection }
    }

    /// The broker answered (or the client can never send) acknowledgement `serial` of `topic`:
    /// forgotten, unless a later one replaced it.
    mutating func settled(topic: String, serial: UInt64) {
        if entries[topic]?.serial == serial { entries[topic] = nil }
    }

    /// The acknowledgements not published on connection `connection`, to publish on it.
    func due(connection: Int) -> [(topic: String, entry: Entry)] {
        entries.compactMap { $0.value.sentOn == connection ? nil : ($0.key, $0.value) }
    }

    /// Acknowledgements the broker has not answered yet.
    var count: Int { entries.count }
}
