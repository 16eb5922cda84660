/// What the state store keeps of one user for care-team reports: the recorded series points, the
/// alert episodes and the timeline, over the history's retention. The input of the care reports (`WeeklyDigest`)
/// and of the pages; produced by the daemon's history (state store) or by an offline replay.
package struct UserHistory: Hashable, Sendable {
    /// The user id.
    package var user: String
    /// Recorded series by name: one value per local day, the latest (a revised day replaces its
    /// earlier value), `nil` where the day was missing. Days absent from the map were not recorded.
    /// Values are SI (the published value converted from its unit: a published 28 % is 0.28), so
    /// that a report's display unit (`DisplayUnit.factor`) applies to them.
    package var series: [String: [DayNumber: Double?]]
    /// The unit each series is published in on the series topic (`m/s`, `%`; empty for counts).
    package var units: [String: String]
    /// Alert episodes, oldest first.
    package var alerts: [AlertEpisode]
    /// Clinical events and annotations, oldest first.
    package var timeline: [TimelineEvent]

    package init(
        user: String, series: [String: [DayNumber: Double?]] = [:], units: [String: String] = [:],
        alerts: [AlertEpisode] = [], timeline: [TimelineEvent] = []
    ) {
        self.user = user
        self.series = series
        self.units = units
        self.alerts = alerts
        self.timeline = timeline
    }
}

/// One alert instance from firing to its end, resolved or expired (or still active), with what
/// each of its transitions said.
package struct AlertEpisode: Hashable, Sendable {
    /// The instance id (the `id` of its transitions).
    package var id: String
    /// The rule's name.
    package var rule: String
    /// The rule's severity.
    package var severity: Severity
    /// The local day it became active (its condition first held).
    package var sinceDay: DayNumber
    /// The local day it fired on.
    package var firedDay: DayNumber
    /// The local day it ended on (resolved or expired); nil while active.
    package var endedDay: DayNumber?
    /// True when it ended by expiring (its rule's monitoring window closed, or the rule was
    /// removed), not by resolving: it stopped being watched, not holding.
    package var expired: Bool
    /// The local day it was withdrawn on, if it was: a late timeline entry or late samples
    /// re-evaluated the patient's days and the alert did not hold on them (a false alarm, also
    /// when it had already ended).
    package var withdrawnDay: DayNumber?
    /// What its transitions said, in order (firing, reminders, its end).
    package var texts: [Text]
    /// Its labels.
    package var labels: [String: String]

    /// What one transition said, on its local day.
    package struct Text: Hashable, Sendable {
        /// The transition's evaluated local day.
        package var day: DayNumber
        /// True for the firing and its reminders, false for the end.
        package var firing: Bool
        /// Its headline.
        package var headline: String
        /// Its details.
        package var details: String

        package init(day: DayNumber, firing: Bool, headline: String, details: String = "") {
            self.day = day
            self.firing = firing
            self.headline = headline
            self.details = details
        }
    }

    /// The headline of its latest transition: what the pages quote.
    package var headline: String { texts.last?.headline ?? "" }
    /// The details of its latest transition.
    package var details: String { texts.last?.details ?? "" }
    /// The headline of its firing or latest reminder: what held while it fired.
    package var firedHeadline: String? { texts.last { $0.firing }?.headline }

    /// The episode as it stood at the end of `day`: only the texts of its transitions up to that
    /// day, and not ended if it ended later. A report of a week quotes what was said that week,
    /// not what a later reminder or the end said.
    package func asOf(_ day: DayNumber) -> AlertEpisode {
        var e = self
        let through = texts.filter { $0.day <= day }
        e.texts = through.isEmpty ? Array(texts.prefix(1)) : through
        if let end = endedDay, end > day {
            e.endedDay = nil
            e.expired = false
        }
        if let w = withdrawnDay, w > day { e.withdrawnDay = nil }
        return e
    }

    /// Creates an episode of one transition's text, or of a firing's (`firedHeadline` on
    /// `firedDay`) and a later one's (`headline`, on `endedDay` or the firing day).
    package init(
        id: String, rule: String, severity: Severity, sinceDay: DayNumber? = nil, firedDay: DayNumber, endedDay: DayNumber?,
        headline: String, details: String = "", labels: [String: String] = [:], firedHeadline: String? = nil, expired: Bool = false
    ) {
        self.id = id
        self.rule = rule
        self.severity = severity
        self.sinceDay = sinceDay ?? firedDay
        self.firedDay = firedDay
        self.endedDay = endedDay
        self.expired = expired
        self.labels = labels
        let last = Text(day: endedDay ?? firedDay, firing: endedDay == nil, headline: headline, details: details)
        if let firedHeadline, firedHeadline != headline || endedDay != nil {
            texts = [Text(day: firedDay, firing: true, headline: firedHeadline), last]
        } else {
            texts = [last]
        }
    }
}

extension UserHistory {
    /// The unit series `name` is stored in (`.one` for a unit no rule spells).
    package func unit(of name: String) -> MeasureUnit { MeasureUnit.rule(units[name] ?? "") ?? .one }

    /// A stored (SI) series value as the history API and the research export give it: in `unit`,
    /// rounded to 1e-6, so both show the same number.
    package static func shown(_ si: Double, in unit: MeasureUnit) -> Double { (si / unit.toSI * 1e6).rounded() / 1e6 }
}
