import CareReports
import Foundation
import MobilityModel
import MobilityWire
import RuleLanguage
import StateStore

/// The weekly care-team report of users whose local ISO week has closed.
///
/// A week closes with its Sunday: when the engine publishes the Sunday's series points (not a
/// revision), the shard records a *due* marker (an empty weekly row) in the same commit. After the
/// commit, the digest is built from the store's history, kept in the store (replacing the marker),
/// published retained on `{root}/users/{u}/reports/weekly`, and the user's history is pruned. A
/// marker left by a crash is built at the next start, so no week is lost.
struct WeeklyReports {
    /// Which series feed the report (the rule set's `report` block).
    var spec: ReportSpec
    /// Days of history kept before the user's latest day (`--history-days`).
    var historyDays: Int
    /// The reports of a rule set: nil without history or without a `report` block.
    init?(program: Program, historyDays: Int?) {
        guard let historyDays, let d = program.report else { return nil }
        self.init(spec: ReportSpec(d), historyDays: historyDays)
    }

    /// Creates the reports of a spec.
    init(spec: ReportSpec, historyDays: Int) {
        self.spec = spec
        self.historyDays = historyDays
    }

    /// Weekly reports are kept this many days (a year of weeks, and the one a year ago).
    static let reportDays: DayNumber = 371

    /// A user's week.
    struct Due: Hashable {
        var user: String
        var week: ISOWeek
    }

    /// The due marker of a week, written with the commit that closed its Sunday.
    static func marker(_ d: Due) -> HistoryRecord {
        HistoryRecord(user: d.user, kind: .weekly, key: d.week.description, day: d.week.monday)
    }

    /// The week a series point closes, if it is the (first) publication of a Sunday.
    static func closes(_ p: SeriesPoint) -> ISOWeek? {
        guard !p.revised else { return nil }
        let day = p.day.dayNumber
        return ISOWeek.weekday(day) == 6 ? ISOWeek(containing: day) : nil
    }

    /// Builds the digest of a due week from the store: the history of the week, the week before,
    /// and the baseline days before the latest clinical event (from `timeline`, the engine's).
    func digest(_ d: Due, timeline: [TimelineEvent], store: any StateBackend) throws -> WeeklyDigest {
        var from = d.week.monday - 7
        let baselineDays = [spec.speed, spec.doubleSupport].compactMap { $0?.baselineDays }.max() ?? 0
        if baselineDays > 0, let event = timeline.filter({ $0.category == .clinical && $0.firstDay <= d.week.sunday }).map(\.firstDay).max() {
            from = min(from, event - DayNumber(baselineDays) - 1)
        }
        let history = try store.history(of: d.user, from: from, through: d.week.sunday)
        return WeeklyDigest.make(history: history, spec: spec, week: d.week)
    }

    /// The first day of history kept after a week's report: the history days before its Sunday,
    /// or from 30 days before the latest clinical event if that is earlier (the recovery panel).
    func keepFrom(_ d: Due, timeline: [TimelineEvent]) -> DayNumber {
        var keep = d.week.sunday - DayNumber(historyDays)
        if let event = timeline.filter({ $0.category == .clinical && $0.firstDay <= d.week.sunday }).map(\.firstDay).max() {
            keep = min(keep, event - 30)
        }
        return keep
    }
}

extension TopicLayout {
    /// `{root}/users/{user}/reports/weekly`: the latest weekly report, retained.
    func weeklyReport(_ user: String) -> String { "\(root)/users/\(user)/reports/weekly" }
}
