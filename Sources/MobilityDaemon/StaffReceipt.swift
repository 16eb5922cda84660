import Dispatch
import Synchronization

/// What a desk made of a care-staff command (an acknowledgement, a silence command).
enum StaffOutcome: Sendable, Equatable {
    /// Taken: committed and announced (or a re-delivered silence that stands already).
    case accepted
    /// Refused with the reason published on the team's `commands/rejected`; nothing changed.
    case refused(reason: String, message: String)
    /// Another instance owns the patient or decides the team, and answers it.
    case otherInstance
}

/// The outcome of a command handed to a shard, for the thread that waits for it (the
/// subscriber's, which only waits until the shard has taken it; the console's, which shows it).
final class StaffReceipt: Sendable {
    private let outcome = Mutex<StaffOutcome?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init() {}

    /// Gives the outcome (once; a later one is ignored).
    func give(_ o: StaffOutcome) {
        let first = outcome.withLock { current -> Bool in
            guard current == nil else { return false }
            current = o
            return true
        }
        if first { done.signal() }
    }

    /// Waits up to `seconds` for the outcome; nil when none came.
    func wait(seconds: Double) -> StaffOutcome? {
        _ = done.wait(timeout: .now() + seconds)
        return outcome.withLock { $0 }
    }
}
