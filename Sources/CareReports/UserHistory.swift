import MobilityModel

/// What the state store keeps of one user for care-team reports: the recorded series points, the
/// alert episodes and the timeline, over the history's retention. The input of ``WeeklyDigest``
/// and of the pages; produced by the daemon's history (state store) or by an offline replay.
public struct UserHistory: Hashable, Sendable {
    /// The user id.
    public var user: String
    /// Recorded series by name: one value per local day, the latest (a revised day replaces its
    /// earlier value), `nil` where the day was missing. Days absent from the map were not recorded.
    /// Values are SI (the published value converted from its unit: a published 28 % is 0.28), so
    /// that ``DisplayUnit/factor`` applies to them.
    public var series: [String: [DayNumber: Double?]]
    /// The unit each series is published in on the series topic (`m/s`, `%`; empty for counts).
    public var units: [String: String]
    /// Alert episodes, oldest first.
    public var alerts: [AlertEpisode]
    /// Clinical events and annotations, oldest first.
    public var timeline: [TimelineEvent]

    /// Creates a history.
    public init(
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

/// One alert instance from firing to its end, resolved or expired (or still active).
public struct AlertEpisode: Hashable, Sendable {
    /// The instance id (the `id` of its transitions).
    public var id: String
    /// The rule's name.
    public var rule: String
    /// The rule's severity.
    public var severity: Severity
    /// The local day it fired on.
    public var firedDay: DayNumber
    /// The local day it ended on (resolved or expired); nil while active.
    public var endedDay: DayNumber?
    /// True when it ended by expiring (its rule's monitoring window closed, or the rule was
    /// removed), not by resolving: it stopped being watched, not holding.
    public var expired: Bool
    /// The summary of its latest transition (numbers included).
    public var summary: String
    /// The summary of its firing transition or latest reminder: what held while it fired (an
    /// ended transition's summary has the numbers of the day it stopped holding or being watched).
    public var firedSummary: String?
    /// Its labels.
    public var labels: [String: String]

    /// The summary the pages quote: what held while it fired (``firedSummary``), else the latest
    /// transition's (a history begun at its end).
    public var reportedSummary: String { firedSummary ?? summary }

    /// Creates an episode.
    public init(
        id: String, rule: String, severity: Severity, firedDay: DayNumber, endedDay: DayNumber?, summary: String,
        labels: [String: String] = [:], firedSummary: String? = nil, expired: Bool = false
    ) {
        self.firedSummary = firedSummary
        self.expired = expired
        self.id = id
        self.rule = rule
        self.severity = severity
        self.firedDay = firedDay
        self.endedDay = endedDay
        self.summary = summary
        self.labels = labels
    }
}
