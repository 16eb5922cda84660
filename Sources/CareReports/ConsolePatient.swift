import MobilityModel

/// One row of the console's patient list: what needs attention (the firing alerts, each with who
/// acknowledged or silenced it), the days since the latest clinical event, the last day with data,
/// and the 7-day walking speed against its baseline. Made from the patient's history and what
/// the daemon holds of acknowledgements and silences; pure (today is given).
package struct ConsolePatient: Sendable {
    /// A firing alert instance.
    package struct Firing: Sendable, Equatable {
        /// The instance id (what an acknowledgement names).
        package var id: String
        /// Its rule.
        package var rule: String
        /// Its severity.
        package var severity: Severity
        /// What it says.
        package var headline: String
        /// The local day it fired on.
        package var firedDay: DayNumber
        /// Who acknowledged it, if anyone.
        package var acknowledgedBy: String?
        /// Who made each silence in force over it (by silence).
        package var silencedBy: [String]

        /// Whether nobody has taken it in hand yet (neither acknowledged nor silenced).
        package var isOpen: Bool { acknowledgedBy == nil && silencedBy.isEmpty }
    }

    /// The user id.
    package var user: String
    /// The patient's care teams.
    package var teams: [String]
    /// Firing alerts: open ones first, by severity, then the newest.
    package var firing: [Firing]
    /// The latest clinical event (kind) and the days since it, if any.
    package var sinceEvent: (kind: String, days: Int)?
    /// The last local day with any recorded value.
    package var lastDataDay: DayNumber?
    /// Whole days without data: the days after ``lastDataDay`` before today (today is still
    /// going: data through yesterday is 0); nil without any data.
    package var daysWithoutData: Int?
    /// The smoothed walking speed over the last 28 days (display unit), by day.
    package var speed: [(day: DayNumber, value: Double)]
    /// The walking-speed baseline (display unit), if the rules define one and it can be taken.
    package var baseline: Double?
    /// The walking speed's display unit symbol.
    package var speedUnit: String

    /// The days drawn in the trend line.
    package static let trendDays = 28
    /// Days without data from which a row says so in red.
    package static let staleDays = 2

    /// The row of `history` on `today`: `acknowledgedBy` gives who acknowledged an instance,
    /// `silencedBy` who made each silence in force over an episode.
    package init(
        history: UserHistory, teams: [String], today: DayNumber, spec: ReportSpec?, acknowledgedBy: (String) -> String?,
        silencedBy: (AlertEpisode) -> [String]
    ) {
        user = history.user
        self.teams = teams
        firing = history.alerts.filter { $0.endedDay == nil && $0.withdrawnDay == nil }.map { e in
            Firing(
                id: e.id, rule: e.rule, severity: e.severity, headline: e.firedHeadline ?? e.headline, firedDay: e.firedDay,
                acknowledgedBy: acknowledgedBy(e.id), silencedBy: silencedBy(e))
        }
        .sorted { a, b in
            if a.isOpen != b.isOpen { return a.isOpen }
            if a.severity.rank != b.severity.rank { return a.severity.rank > b.severity.rank }
            return (a.firedDay, a.id) > (b.firedDay, b.id)
        }
        sinceEvent = ReportWindow.latestClinicalEvent(history, onOrBefore: today).map { ($0.kind, Int(today - $0.firstDay)) }
        lastDataDay = history.series.values.compactMap { days in days.filter { $0.value?.isFinite == true }.keys.max() }.max()
        daysWithoutData = lastDataDay.map { max(0, Int(today - $0) - 1) }
        speedUnit = spec?.speed?.displayUnit.symbol ?? ""
        speed = []
        baseline = nil
        if let panel = spec?.speed {
            let window = (today - DayNumber(Self.trendDays - 1))...today
            let t = TrendSeries(history, panel, window: window)
            speed = t.segments.flatMap { $0 }.sorted { $0.day < $1.day }
            baseline = t.baseline?.value
        }
    }

    /// The latest smoothed speed.
    package var latestSpeed: Double? { speed.last?.value }

    /// The rank of the row in the default order: open alerts by their worst severity, then
    /// handled ones, then patients without data for ``staleDays`` or more, then everyone else.
    package var attention: Int {
        if let worst = firing.filter(\.isOpen).map(\.severity.rank).max() { return 10 + worst }
        if !firing.isEmpty { return 5 }
        if let d = daysWithoutData, d >= Self.staleDays { return 4 }
        if daysWithoutData == nil { return 3 }
        return 0
    }
}

extension Severity {
    /// Info 1, warning 2, critical 3.
    package var rank: Int {
        switch self {
        case .info: 1
        case .warning: 2
        case .critical: 3
        }
    }
}
