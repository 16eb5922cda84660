import Foundation
import Synchronization

/// Why and when a run ends: requested once by a signal (``SignalService``), a refused broker connection, a partition
/// rebalance or a fenced commit; waited for by the ``ServiceGroup`` (which then stops the
/// services) and by whatever blocks and must give up when the run ends (the journal's retries).
/// The first request ends the run; a later one may still set a non-zero exit code or note a signal.
final class Termination: Sendable {
    private struct State {
        var requested = false
        var exitCode: Int32 = 0
        var bySignal = false
    }
    private let state = Mutex(State())
    /// Entered once at creation and left by the first request: waiting on it wakes every waiter,
    /// and every wait after the request returns at once.
    private let ended = DispatchGroup()

    init() { ended.enter() }

    /// Ends the run (the first call wakes the waiters). `bySignal`: SIGTERM or SIGINT asked for it.
    func request(exitCode: Int32 = 0, bySignal: Bool = false) {
        let first = state.withLock { s in
            if exitCode != 0 { s.exitCode = exitCode }
            if bySignal { s.bySignal = true }
            if s.requested { return false }
            s.requested = true
            return true
        }
        if first { ended.leave() }
    }

    /// Whether the run was asked to end.
    var isRequested: Bool { state.withLock { $0.requested } }

    /// Whether SIGTERM or SIGINT ended the run.
    var bySignal: Bool { state.withLock { $0.bySignal } }

    /// The code the process exits with: 0 unless a request said otherwise.
    var exitCode: Int32 { state.withLock { $0.exitCode } }

    /// Waits until the run is asked to end.
    func wait() { ended.wait() }

    /// Calls `action` once, on a queue of its own, after the first request (at once if it came
    /// already): what must follow the end of the run without blocking a thread on ``wait()``.
    func whenRequested(_ action: @escaping @Sendable () -> Void) {
        ended.notify(queue: DispatchQueue(label: "mobilityd.termination"), execute: action)
    }

    /// Waits until the run is asked to end, at most `seconds`; true when it was.
    func wait(seconds: Double) -> Bool { ended.wait(timeout: .now() + seconds) == .success }
}
