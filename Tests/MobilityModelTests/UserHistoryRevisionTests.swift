import MobilityModel
import Testing

/// A revision's transitions in the history: an alert that fires again with its id after an end
/// (it goes on after all), or that a later revision supports again after it was withdrawn, reads
/// active again.
@Suite struct UserHistoryRevisionTests {
    static func t(_ status: AlertStatus, day: Int, reason: String? = nil) -> AlertTransition {
        let d0 = CivilDate(year: 2026, month: 1, day: 1)
        let since = Timestamp(milliseconds: 1_767_225_600_000)
        return AlertTransition(
            id: "x", rule: "drop", user: "u", severity: .warning, status: status, activeSince: since, firedAt: since,
            resolvedAt: status == .resolved ? since : nil, day: CivilDate(dayNumber: d0.dayNumber + DayNumber(day)), headline: "h",
            labels: [], evidence: [], annotations: [], reason: reason, activeSinceDay: d0, firedDay: d0)
    }

    @Test func anEpisodeThatFiresAgainWithItsIdIsActiveAgain() {
        var h = UserHistory(user: "u")
        h.record(Self.t(.firing, day: 0))
        h.record(Self.t(.resolved, day: 3))
        h.record(Self.t(.firing, day: 9))
        #expect(h.alerts.count == 1 && h.alerts[0].endedDay == nil)
    }

    @Test func aWithdrawnEpisodeSupportedAgainIsNoLongerWithdrawn() {
        var h = UserHistory(user: "u")
        h.record(Self.t(.firing, day: 0))
        h.record(Self.t(.resolved, day: 5, reason: AlertTransition.revised))
        #expect(h.alerts[0].withdrawnDay != nil && h.alerts[0].endedDay != nil)
        h.record(Self.t(.firing, day: 8))
        #expect(h.alerts[0].withdrawnDay == nil && h.alerts[0].endedDay == nil)
    }
}
