import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

@testable import MobilityDaemon

/// Signals become requests in one place (`SignalService`): its own thread takes them with
/// `sigwait`, and mobilityd blocks them from its first line, so one sent during start-up waits
/// for the handlers instead of being lost or ending the process by its default action.
@Suite(.serialized) struct SignalServiceTests {
    /// A shutdown signal is announced and ends the run as a signal, and so again for the handlers
    /// of a second run in the process (the partition supervisor's runs). Sent to the taking thread:
    /// the test runner does not block the signal in its other threads, as mobilityd does.
    @Test func aShutdownSignalEndsTheRunAlsoInASecondRun() throws {
        for _ in 0..<2 {
            let termination = Termination()
            let announced = Mutex<[Int32]>([])
            let signals = SignalService(
                .init(shutdown: [SIGUSR2], announce: { s in announced.withLock { $0.append(s) } }, reload: nil), termination: termination)
            signals.start()
            defer { signals.stop() }
            let thread = try #require(signals.takingThread)
            #expect(pthread_kill(thread, SIGUSR2) == 0)
            #expect(termination.wait(seconds: 10))
            #expect(termination.bySignal && termination.exitCode == 0)
            #expect(announced.withLock { $0 == [SIGUSR2] })
        }
    }

    /// A reload signal calls its handler each time and ends nothing; stopping ends the thread
    /// without calling a handler.
    @Test func aReloadSignalCallsItsHandlerAndStopEndsTheThread() throws {
        let termination = Termination()
        let reloads = Atomic<Int>(0)
        let signals = SignalService(
            .init(shutdown: [], announce: { _ in }, reload: (SIGUSR1, { reloads.add(1, ordering: .relaxed) })), termination: termination)
        signals.start()
        let thread = try #require(signals.takingThread)
        for n in 1...3 {
            #expect(pthread_kill(thread, SIGUSR1) == 0)
            #expect(eventually(timeout: 10) { reloads.load(ordering: .relaxed) == n })
        }
        signals.stop()
        #expect(signals.takingThread == nil)
        #expect(reloads.load(ordering: .relaxed) == 3 && !termination.isRequested)
    }
}

extension SignalServiceTests {
    /// A signal pending when the service stops is handled, not taken for the stop's wake-up (the
    /// wake was one of the handled signals, and a pending one merged with it was dropped).
    @Test func aSignalPendingAtStopIsStillHandled() throws {
        let reloads = Atomic<Int>(0)
        let inHandler = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let signals = SignalService(
            .init(
                shutdown: [], announce: { _ in },
                reload: (
                    SIGUSR1,
                    {
                        if reloads.add(1, ordering: .relaxed).newValue == 1 {
                            inHandler.signal()
                            release.wait()
                        }
                    }
                )), termination: Termination())
        signals.start()
        let thread = try #require(signals.takingThread)
        #expect(pthread_kill(thread, SIGUSR1) == 0)
        #expect(inHandler.wait(timeout: .now() + 10) == .success)
        #expect(pthread_kill(thread, SIGUSR1) == 0)  // pending while the first is handled
        let stopped = DispatchSemaphore(value: 0)
        Thread {
            signals.stop()
            stopped.signal()
        }.start()
        #expect(eventually(timeout: 10) { signals.takingThread == nil })  // stop() has sent its wake-up (then forgets the thread)
        release.signal()
        #expect(stopped.wait(timeout: .now() + 10) == .success)
        #expect(reloads.load(ordering: .relaxed) == 2)
    }
}

/// The start-up window, on a real mobilityd: a signal sent while its state is being restored
/// (systemd's `STATUS=restoring state`, before any handler exists) is acted on once it has started.
extension SignalServiceTests {
    /// mobilityd started with the empty signal mask and default dispositions systemd gives it,
    /// reporting to a notify socket of the test's own; returns once it says it is restoring state.
    static func startingDaemon(_ broker: MosquittoBroker, _ notify: NotifySocket, state: String) throws -> ChildProcess {
        let daemon = try ChildProcess(
            ChildProcess.product("mobilityd"),
            ["--broker", broker.url, "--rules", RepoPaths.rules, "--state", state, "--metrics-address", "127.0.0.1:0"],
            environment: ["NOTIFY_SOCKET": notify.path])
        try #require(eventually(timeout: 15) { notify.messages.contains { $0.text == "STATUS=restoring state" } }, "\(daemon.log)")
        return daemon
    }

    /// SIGTERM during start-up: the run starts, then drains and stops with 0 (it ended by its
    /// default action, or was ignored until the unit's stop timeout, before).
    @Test func aShutdownSignalDuringStartUpStopsTheDaemonOnceStarted() throws {
        let broker = try MosquittoBroker()
        let notify = try NotifySocket()
        let state = TemporaryPath.make("mw-state")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let daemon = try Self.startingDaemon(broker, notify, state: state)
        daemon.signal(SIGTERM)
        #expect(daemon.wait(timeout: 15) == 0, "\(daemon.log)")
        #expect(daemon.log.contains("msg=\"shutting down\" signal=SIGTERM"))
        #expect(daemon.log.contains("msg=stopped exit_code=0"))
        #expect(notify.messages(with: "STOPPING=1").count == 1)
    }

    /// SIGHUP during start-up: the daemon starts and reloads its rules once it has; it goes on
    /// running (a reload must never end it).
    @Test func aReloadSignalDuringStartUpReloadsOnceStarted() throws {
        let broker = try MosquittoBroker()
        let notify = try NotifySocket()
        let state = TemporaryPath.make("mw-state")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let daemon = try Self.startingDaemon(broker, notify, state: state)
        daemon.signal(SIGHUP)
        #expect(eventually(timeout: 15) { daemon.log.contains("msg=\"rules reloaded\"") }, "\(daemon.log)")
        #expect(daemon.isRunning)
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }
}
