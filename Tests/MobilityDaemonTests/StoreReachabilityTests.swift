import PostgresStore
import Testing

@testable import MobilityDaemon

/// The start's wait for a PostgreSQL store that does not answer yet, on a probe and pauses of the
/// test's own (the real server: PostgresStoreDaemonTests).
@Suite struct StoreReachabilityTests {
    static let log = Logger(format: .logfmt, level: .error)

    /// Probes answering from `answers` in turn (nil: the server answers); records the pauses.
    final class Script: @unchecked Sendable {
        var answers: [PostgresError?]
        var pauses: [Double] = []
        var probes = 0
        init(_ answers: [PostgresError?]) { self.answers = answers }
        func reachability(stopAfterPauses: Int? = nil) -> StoreReachability {
            var r = StoreReachability(log: StoreReachabilityTests.log) { _ in
                self.probes += 1
                return self.answers.isEmpty ? nil : self.answers.removeFirst()
            }
            r.pause = { termination, seconds in
                self.pauses.append(seconds)
                if let n = stopAfterPauses, self.pauses.count >= n { termination.request(bySignal: true) }
                return termination.isRequested
            }
            return r
        }
    }

    @Test func anUnreachableServerIsAskedAgainWithGrowingPausesUntilItAnswers() {
        let down = PostgresError.connection("connection to server at \"127.0.0.1\", port 1 failed: Connection refused")
        let script = Script(Array(repeating: down, count: 6))
        #expect(script.reachability().waitUntilReachable("postgres://mw@127.0.0.1:1/db", termination: Termination()))
        #expect(script.probes == 7)
        #expect(script.pauses == [1, 2, 4, 8, 15, 15])
    }

    @Test func aRefusedURLIsNotWaitedFor() {
        let script = Script([PostgresError.configuration("a password in the URL")])
        #expect(script.reachability().waitUntilReachable("postgres://mw:pw@127.0.0.1/db", termination: Termination()))
        #expect(script.probes == 1 && script.pauses.isEmpty)
    }

    @Test func aStopAskedForWhileWaitingEndsTheWait() {
        let down = PostgresError.connection("Connection refused")
        let script = Script(Array(repeating: down, count: 100))
        let termination = Termination()
        #expect(!script.reachability(stopAfterPauses: 2).waitUntilReachable("postgres://mw@127.0.0.1:1/db", termination: termination))
        #expect(script.pauses.count == 2 && script.probes == 2)
    }
}
