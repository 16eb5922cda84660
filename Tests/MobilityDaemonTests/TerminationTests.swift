import Foundation
import Synchronization
import Testing

@testable import MobilityDaemon

@Suite struct TerminationTests {
    @Test func theFirstRequestEndsTheRunAndLaterOnesKeepTheirCodeAndSignal() {
        let t = Termination()
        #expect(!t.isRequested)
        #expect(!t.wait(seconds: 0.01))
        t.request()
        #expect(t.isRequested)
        #expect(t.wait(seconds: 0))
        #expect(t.exitCode == 0 && !t.bySignal)
        t.request(exitCode: 1, bySignal: true)
        #expect(t.exitCode == 1 && t.bySignal)
        t.request()
        #expect(t.exitCode == 1, "a later request without a code keeps the failure")
        t.wait()  // returns at once
    }

    /// A request from another thread wakes every waiter.
    @Test func aRequestWakesEveryWaiter() {
        let t = Termination()
        let woken = DispatchGroup()
        for _ in 0..<3 {
            woken.enter()
            Thread.detachNewThread {
                t.wait()
                woken.leave()
            }
        }
        #expect(woken.wait(timeout: .now() + 0.05) == .timedOut)
        t.request(exitCode: 75)
        #expect(woken.wait(timeout: .now() + 10) == .success)
        #expect(t.exitCode == 75)
    }

    /// What follows the end of the run is called once after the first request, and at once
    /// when the request came before.
    @Test func whatFollowsARequestIsCalledOnceAfterIt() {
        let t = Termination()
        let calls = Mutex(0)
        let called = DispatchSemaphore(value: 0)
        t.whenRequested {
            calls.withLock { $0 += 1 }
            called.signal()
        }
        #expect(called.wait(timeout: .now() + .milliseconds(50)) == .timedOut)
        t.request()
        t.request(exitCode: 1)
        #expect(called.wait(timeout: .now() + .seconds(10)) == .success)
        t.whenRequested { called.signal() }
        #expect(called.wait(timeout: .now() + .seconds(10)) == .success)
        #expect(calls.withLock { $0 } == 1)
    }
}
