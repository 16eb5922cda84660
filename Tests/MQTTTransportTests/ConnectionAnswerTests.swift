import MQTTTransport
import Testing

@Suite struct ConnectionAnswerTests {
    static let s: UInt64 = 1_000_000_000

    /// A connection unanswered for 5 s is overdue; each node passed over in a row is given twice
    /// as long, up to the keep-alive; an answer (one more connection answered than when the
    /// attempt was made) brings the patience back to 5 s.
    @Test func patienceDoublesForEachNodePassedOverAndResetsOnAnAnswer() {
        var a = ConnectionAnswer(keepAliveSeconds: 15)
        #expect(a.overdue(connections: 0, now: 100 * Self.s) == nil)  // nothing attempted
        a.attempted(now: 0, connections: 0)
        #expect(a.overdue(connections: 0, now: 4 * Self.s) == nil)
        #expect(a.overdue(connections: 0, now: 5 * Self.s) == 5)
        #expect(a.overdue(connections: 0, now: 6 * Self.s) == nil)  // no longer waited for
        for (at, patience) in [(10, 10), (30, 15), (60, 15)] {
            a.attempted(now: UInt64(at) * Self.s, connections: 0)
            #expect(a.overdue(connections: 0, now: UInt64(at + patience) * Self.s - 1) == nil)
            #expect(a.overdue(connections: 0, now: UInt64(at + patience) * Self.s) == patience)
        }
        a.attempted(now: 100 * Self.s, connections: 0)
        #expect(a.overdue(connections: 1, now: 101 * Self.s) == nil)
        #expect(a.overdue(connections: 1, now: 150 * Self.s) == nil)  // answered: nothing waits
        a.attempted(now: 200 * Self.s, connections: 1)
        #expect(a.overdue(connections: 1, now: 205 * Self.s) == 5)
    }
}
