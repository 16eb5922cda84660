import MQTTTransport
import Testing

@Suite struct ConnectionAnswerTests {
    static let s: UInt64 = 1_000_000_000

    /// A connection unanswered for 3 s is overdue; each node passed over in a row is given twice
    /// as long, up to the keep-alive; an answer brings the patience back to 3 s.
    @Test func patienceDoublesForEachNodePassedOverAndResetsOnAnAnswer() {
        var a = ConnectionAnswer(keepAliveSeconds: 10)
        #expect(a.overdue(connected: false, now: 100 * Self.s) == nil)  // nothing attempted
        a.attempted(now: 0)
        #expect(a.overdue(connected: false, now: 2 * Self.s) == nil)
        #expect(a.overdue(connected: false, now: 3 * Self.s) == 3)
        #expect(a.overdue(connected: false, now: 4 * Self.s) == nil)  // no longer waited for
        for (at, patience) in [(10, 6), (30, 10), (60, 10)] {
            a.attempted(now: UInt64(at) * Self.s)
            #expect(a.overdue(connected: false, now: UInt64(at + patience) * Self.s - 1) == nil)
            #expect(a.overdue(connected: false, now: UInt64(at + patience) * Self.s) == patience)
        }
        a.attempted(now: 100 * Self.s)
        #expect(a.overdue(connected: true, now: 101 * Self.s) == nil)
        #expect(a.overdue(connected: false, now: 150 * Self.s) == nil)  // answered: nothing waits
        a.attempted(now: 200 * Self.s)
        #expect(a.overdue(connected: false, now: 203 * Self.s) == 3)
    }
}
