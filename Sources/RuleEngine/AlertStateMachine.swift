/// The lifecycle of one alert for one user: inactive → pending → firing → (resolved) inactive.
///
/// A struct that returns an action; the caller publishes. Time is event time, passed in.
/// An unknown condition (insufficient data) resets a pending alert and holds a firing one.
public struct AlertStateMachine: Hashable, Sendable {
    /// The states, in Prometheus's vocabulary.
    public enum State: Hashable, Sendable {
        case inactive
        /// The condition holds since `activeSince`; waiting for `for` to elapse.
        case pending(activeSince: Int64)
        /// Firing since `firedAt`; `lastTrue` is the last evaluation where the condition held.
        case firing(activeSince: Int64, firedAt: Int64, lastTrue: Int64, lastSent: Int64)
    }

    /// What the caller must do.
    public enum Action: Hashable, Sendable {
        case none
        /// Publish a firing transition.
        case fire(activeSince: Int64, firedAt: Int64)
        /// Publish a reminder that the alert is still firing (same id).
        case repeatFiring(activeSince: Int64, firedAt: Int64)
        /// Publish a resolved transition.
        case resolve(activeSince: Int64, firedAt: Int64, resolvedAt: Int64)
    }

    /// The current state.
    public private(set) var state: State = .inactive
    /// No new firing before this instant (cooldown after a resolve), in ms.
    public private(set) var quietUntil: Int64 = .min
    /// The event time of the last evaluation, in ms (older evaluations are ignored).
    public private(set) var lastEvaluated: Int64 = .min

    /// Creates an inactive alert.
    public init() {}

    /// Restores a saved state.
    public init(state: State, quietUntil: Int64, lastEvaluated: Int64) {
        self.state = state
        self.quietUntil = quietUntil
        self.lastEvaluated = lastEvaluated
    }

    /// Whether the alert is firing.
    public var isFiring: Bool { if case .firing = state { return true } else { return false } }

    /// Feeds one evaluation.
    /// - Parameters:
    ///   - condition: true, false, or nil for unknown.
    ///   - at: the event time of the evaluation (ms): the close of the day, or the sample's end.
    ///   - activeSince: when the condition would count as having started (the day's start, or the sample's end).
    ///   - rule: the durations of the rule (ms).
    public mutating func evaluate(_ condition: Bool?, at: Int64, activeSince: Int64, forMs: Int64, keepFiringForMs: Int64,
                                  repeatMs: Int64, cooldownMs: Int64) -> Action {
        guard at > lastEvaluated else { return .none }
        lastEvaluated = at
        switch state {
        case .inactive:
            guard condition == true, at >= quietUntil else { return .none }
            if forMs == 0 {
                state = .firing(activeSince: activeSince, firedAt: at, lastTrue: at, lastSent: at)
                return .fire(activeSince: activeSince, firedAt: at)
            }
            state = .pending(activeSince: activeSince)
            return .none
        case .pending(let since):
            guard condition == true else { state = .inactive; return .none }
            if at - since >= forMs {
                state = .firing(activeSince: since, firedAt: at, lastTrue: at, lastSent: at)
                return .fire(activeSince: since, firedAt: at)
            }
            return .none
        case .firing(let since, let fired, let lastTrue, let lastSent):
            switch condition {
            case true?:
                if repeatMs > 0, at - lastSent >= repeatMs {
                    state = .firing(activeSince: since, firedAt: fired, lastTrue: at, lastSent: at)
                    return .repeatFiring(activeSince: since, firedAt: fired)
                }
                state = .firing(activeSince: since, firedAt: fired, lastTrue: at, lastSent: lastSent)
                return .none
            case nil:
                return .none // unknown holds a firing alert: missing data never resolves it
            case false?:
                guard at - lastTrue >= keepFiringForMs else { return .none }
                state = .inactive
                quietUntil = cooldownMs > 0 ? at + cooldownMs : .min
                return .resolve(activeSince: since, firedAt: fired, resolvedAt: at)
            }
        }
    }
}
