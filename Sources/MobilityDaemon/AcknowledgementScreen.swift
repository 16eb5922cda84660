import MobilityModel
import RuleEngine
import StateStore

/// The first output stage: drops from a batch's outputs the reminders of acknowledged alert
/// instances (and marks the firing ones the ``AcknowledgementDesk`` holds acknowledged). A
/// dropped reminder is still history: its row is returned, marked with the acknowledgement.
struct AcknowledgementScreen {
    /// The care-staff acknowledgements (nil: none are taken, nothing is dropped).
    let desk: AcknowledgementDesk?
    /// Whether outputs are recorded in the care-team history.
    let recordsHistory: Bool

    /// Screens `out` in place; returns the history rows of the reminders it dropped.
    func screen(_ out: inout [EngineOutput]) -> [HistoryRecord] {
        guard let desk else { return [] }
        let withheld = desk.screen(&out)
        return recordsHistory ? withheld.map { .alert($0) } : []
    }
}
