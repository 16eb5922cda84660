import Foundation
import MobilityModel
import Synchronization
import TestSupport
import Testing

@testable import MobilityDaemon

/// The service group's order, with fake services that record what happens to them (the daemon
/// tests run the real services: DaemonIntegrationTests, DurabilityTests, ServiceNotifierTests).
@Suite struct ServiceGroupTests {
    struct StartFailed: Error, Equatable { var name: String }

    /// Records starts and stops, in order, across services.
    final class Journal {
        var events: [String] = []
    }

    final class Fake: Service {
        let name: String
        let journal: Journal
        let fails: Bool
        init(_ name: String, _ journal: Journal, fails: Bool = false) {
            self.name = name
            self.journal = journal
            self.fails = fails
        }
        func start() throws {
            journal.events.append("start " + name)
            if fails { throw StartFailed(name: name) }
        }
        func stop() { journal.events.append("stop " + name) }
    }

    @Test func startsInOrderAndStopsInReverse() throws {
        let j = Journal()
        let group = ServiceGroup(["a", "b", "c"].map { Fake($0, j) })
        try group.start()
        #expect(j.events == ["start a", "start b", "start c"])
        group.stop()
        #expect(j.events == ["start a", "start b", "start c", "stop c", "stop b", "stop a"])
    }

    /// A failing start stops the services started before it, in reverse, not itself nor the later
    /// ones, and its error reaches the caller.
    @Test func aFailingStartStopsTheEarlierOnesInReverse() {
        let j = Journal()
        let group = ServiceGroup([Fake("a", j), Fake("b", j), Fake("c", j, fails: true), Fake("d", j)])
        #expect(throws: StartFailed(name: "c")) { try group.start() }
        #expect(j.events == ["start a", "start b", "start c", "stop b", "stop a"])
    }

    @Test func stopHappensOnce() throws {
        let j = Journal()
        let group = ServiceGroup([Fake("a", j), Fake("b", j)])
        try group.start()
        group.stop()
        group.stop()
        #expect(j.events.filter { $0.hasPrefix("stop") } == ["stop b", "stop a"])
    }

    /// After a failed start (which stopped the earlier services) a shutdown's stop stops nothing again.
    @Test func stopAfterAFailedStartStopsNothingMore() {
        let j = Journal()
        let group = ServiceGroup([Fake("a", j), Fake("b", j, fails: true)])
        #expect(throws: StartFailed(name: "b")) { try group.start() }
        group.stop()
        #expect(j.events == ["start a", "start b", "stop a"])
    }

    @Test func aFirstServiceThatFailsStopsNothing() {
        let j = Journal()
        let group = ServiceGroup([Fake("a", j, fails: true), Fake("b", j)])
        #expect(throws: StartFailed(name: "a")) { try group.start() }
        #expect(j.events == ["start a"])
    }
}

extension ServiceGroupTests {
    /// With signals, the handlers are the last service started (and the first stopped).
    @Test func theSignalHandlersStartLast() {
        let group = ServiceGroup([Fake("a", Journal())], signals: .init(shutdown: [SIGUSR2], announce: { _ in }, reload: nil))
        #expect(group.names == ["a", "signals"])
    }

    /// A termination requested by a part of the run (a refused broker connection) ends it with its code.
    @Test func aRequestedTerminationEndsTheRun() throws {
        let j = Journal()
        let termination = Termination()
        let group = ServiceGroup([Fake("a", j)], termination: termination)
        try group.run { termination.request(exitCode: 1) }
        #expect(j.events == ["start a", "stop a"])
        #expect(termination.exitCode == 1 && !termination.bySignal)
    }

    /// Each service's stop is timed on the group's clock, and the slow ones are named for the
    /// run's last line (what a slow stop, which holds up a partition's takeover, waited for).
    @Test func stopsAreTimedAndTheSlowOnesNamed() throws {
        final class Ticks: Sendable { let now = Atomic<UInt64>(0) }
        final class Slow: Service {
            let name: String, ms: UInt64, ticks: Ticks
            init(_ name: String, ms: UInt64, _ ticks: Ticks) { (self.name, self.ms, self.ticks) = (name, ms, ticks) }
            func start() {}
            func stop() { ticks.now.add(ms * 1_000_000, ordering: .relaxed) }
        }
        let ticks = Ticks()
        let clock = DaemonClock(wall: { Timestamp(milliseconds: 0) }, uptimeNanoseconds: { ticks.now.load(ordering: .relaxed) })
        let group = ServiceGroup([Slow("publisher", ms: 1200, ticks), Slow("shards", ms: 40, ticks), Slow("subscriber", ms: 3000, ticks)], clock: clock)
        try group.start()
        group.stop()
        #expect(group.stopTimes.map(\.service) == ["subscriber", "shards", "publisher"])
        #expect(group.stopTimes.map(\.ms) == [3000, 40, 1200])
        #expect(group.slowStops(atLeast: 1000) == "subscriber:3000,publisher:1200")
        #expect(group.slowStops(atLeast: 5000) == "")
    }
}
