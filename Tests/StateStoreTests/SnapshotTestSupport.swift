@testable import RuleEngine

extension UserSnapshot {
    /// The engine state this snapshot restores to, under its own alert names and daily inputs
    /// (no rules to align with), for comparing what a store read with what an engine held.
    var restored: UserState { UserState(restoring: self, alertNames: alerts.map(\.rule), inputs: foldedInputs.map(\.dailyInput)) }
}

extension UserState {
    /// The whole state as a snapshot (every open day, as changed from nothing).
    var whole: UserSnapshot { snapshot(changesOnly: false) }
}
