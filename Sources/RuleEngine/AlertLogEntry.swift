import MobilityModel

/// One rule's alert state as it was before a closed day changed it: what a re-evaluation of that
/// day starts from.
///
/// A user's state keeps these for the days a revision can still reach
/// (``EngineConfiguration/revisionDays``), oldest first, only where a day's evaluation changed a
/// rule's lifecycle (a rule that stays inactive logs nothing), so that a late clinical event,
/// annotation or sample can roll the user's alert states back to the day it changes and evaluate
/// the days since again.
package struct AlertLogEntry: Hashable, Sendable {
    /// The closed day whose evaluation changed the state.
    package var day: DayNumber
    /// The rule's index in the user's alert names.
    package var rule: Int32
    /// The state before that day's evaluation.
    package var before: AlertStateMachine
}

extension AlertStateMachine {
    /// Whether two states are the same lifecycle (state and cooldown), whatever evaluation they
    /// were last given.
    func sameLifecycle(as other: AlertStateMachine) -> Bool { state == other.state && quietUntil == other.quietUntil }

    /// The same state, as if it had last been evaluated no later than `at` (ms): a re-evaluation
    /// from the day that starts at `at` is then not ignored as stale.
    func rewound(to at: Int64) -> AlertStateMachine {
        AlertStateMachine(state: state, quietUntil: quietUntil, lastEvaluated: min(lastEvaluated, at))
    }

    /// The episode a firing state belongs to: its `activeSince` and `firedAt` (nil when not firing).
    var firingEpisode: (since: Int64, fired: Int64)? {
        if case .firing(let since, let fired, _, _) = state { return (since, fired) }
        return nil
    }
}
