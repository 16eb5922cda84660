/// How long a node of several is given to answer a connection it took (the TLS handshake and
/// CONNACK) before the client passes it over: ``initialSeconds``, doubled for each node passed
/// over in a row (a cluster electing its leaders is slow to answer everywhere, and a client
/// that never waited long enough would never connect) up to the keep-alive; back to
/// ``initialSeconds`` once one answers. 5 s: more than one JetStream API request of NATS's MQTT
/// listener (4 s), several of which a persistent session's CONNECT makes; a node passed over
/// that completes the CONNECT later saves the session and ends the client's connection to
/// the next node (a duplicate client id).
package struct ConnectionAnswer {
    package static let initialSeconds = 5
    package let keepAliveSeconds: Int32
    private var patienceSeconds = ConnectionAnswer.initialSeconds
    /// The attempt waiting for its answer: when it was made (uptime, ns) and the connections
    /// answered before it.
    private var waiting: (since: UInt64, connections: Int)?

    package init(keepAliveSeconds: Int32) { self.keepAliveSeconds = keepAliveSeconds }

    /// A connection was made at `now`, `connections` having been answered before it; it waits
    /// for its answer.
    package mutating func attempted(now: UInt64, connections: Int) { waiting = (now, connections) }

    /// At `now`, `connections` having been answered: the seconds waited when the attempt under
    /// way is overdue (it is then no longer waited for, and the next one gets longer), else nil.
    package mutating func overdue(connections: Int, now: UInt64) -> Int? {
        guard let w = waiting else { return nil }
        if connections > w.connections {
            (waiting, patienceSeconds) = (nil, Self.initialSeconds)
            return nil
        }
        guard now &- w.since >= UInt64(patienceSeconds) * 1_000_000_000 else { return nil }
        let waited = patienceSeconds
        waiting = nil
        patienceSeconds = min(2 * patienceSeconds, max(Int(keepAliveSeconds), Self.initialSeconds))
        return waited
    }
}
