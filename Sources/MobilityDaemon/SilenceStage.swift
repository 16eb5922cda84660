import MobilityModel
import StateStore

/// The output stage of care-staff silences: a transition a silence covers is marked
/// (`silencedBy`) and its notifications are withheld from its user and team topics; it is still
/// recorded. The ``SilenceDesk`` holds the silences.
struct SilenceStage {
    /// The care-staff silences (nil: none apply).
    let desk: SilenceDesk?

    /// Marks `a` with the silences in force at `now`; returns their verdict, nil when none covers it.
    func mark(_ a: inout AlertTransition, now: Timestamp) -> SilenceDesk.Verdict? {
        guard let v = desk?.verdict(for: a, now: now) else { return nil }
        a.silencedBy = v.all
        return v
    }

    /// Drops from a marked transition's user and team items the notifications its silences
    /// withhold (``SilenceDesk/withhold(_:_:items:)``); nothing without a verdict.
    func withhold(_ v: SilenceDesk.Verdict?, _ a: AlertTransition, items: inout [StateStore.OutboxItem]) {
        guard let v, let desk else { return }
        desk.withhold(v, a, items: &items)
    }
}
