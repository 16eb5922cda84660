import MobilityModel
import RuleEngine
import StateStore

/// The output stage of the care-team history: an alert transition or a series point is a
/// history row (`--history-days`, none with `off`); a rejection is not.
struct HistoryStage {
    /// Whether outputs are recorded (`--history-days` not `off`).
    let records: Bool

    /// The history row of an output, nil when it has none or nothing is recorded.
    func row(_ o: EngineOutput) -> HistoryRecord? {
        guard records else { return nil }
        return switch o {
        case .alert(let a): .alert(a)
        case .series(let s): .series(s)
        case .rejected: nil
        }
    }
}
