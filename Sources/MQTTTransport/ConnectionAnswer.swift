/// How long a node of several is given to answer a connection it took (the TLS handshake and
/// CONNACK) before the client passes it over: ``initialSeconds``, doubled for each node passed
/// over in a row (a cluster electing its leaders is slow to answer everywhere, and a client
/// that never waited long enough would never connect) up to the keep-alive; back to
/// ``initialSeconds`` once one answers.
package struct ConnectionAnswer {
    package static let initialSeconds = 3
    package let keepAliveSeconds: Int32
    private var patienceSeconds = ConnectionAnswer.initialSeconds
    /// When the attempt waiting for its answer was made (uptime, ns).
    private var since: UInt64?

    package init(keepAliveSeconds: Int32) { self.keepAliveSeconds = keepAliveSeconds }

    /// A connection was made at `now` and waits for its answer.
    package mutating func attempted(now: UInt64) { since = now }

    /// At `now`: the seconds waited when the attempt under way is overdue (it is then no
    /// longer waited for, and the next one gets longer), else nil.
    package mutating func overdue(connected: Bool, now: UInt64) -> Int? {
        guard let s = since else { return nil }
        if connected {
            (since, patienceSeconds) = (nil, Self.initialSeconds)
            return nil
        }
        guard now &- s >= UInt64(patienceSeconds) * 1_000_000_000 else { return nil }
        let waited = patienceSeconds
        since = nil
        patienceSeconds = min(2 * patienceSeconds, max(Int(keepAliveSeconds), Self.initialSeconds))
        return waited
    }
}
