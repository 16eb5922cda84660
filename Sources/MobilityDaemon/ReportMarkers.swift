import MobilityModel
import RuleLanguage
import StateStore

/// The output stage of weekly reports: the series point that closes a user's week (its Sunday,
/// first published) makes the week due, and its due marker goes with the commit
/// (``WeeklyReports``). Holds the due weeks until the shard hands them to its ``ReportWorker``.
struct ReportMarkers {
    /// The reports of the loaded rules (nil: no history or no `report` block; nothing is due).
    private(set) var reports: WeeklyReports?
    /// `--history-days` (nil: `off`), to make the reports of reloaded rules.
    let historyDays: Int?
    /// Weeks whose marker is committed or pending, not handed to the report worker yet.
    var due: Set<WeeklyReports.Due> = []

    /// The markers of a shard running `program`.
    init(program: Program, historyDays: Int?) {
        self.historyDays = historyDays
        self.reports = WeeklyReports(program: program, historyDays: historyDays)
    }

    /// Takes the report block of reloaded rules.
    mutating func reload(_ program: Program) { reports = WeeklyReports(program: program, historyDays: historyDays) }

    /// The marker of the week `p` closes, once per due week; nil when it closes none, the week is
    /// due already, or there are no reports.
    mutating func marker(_ p: SeriesPoint) -> HistoryRecord? {
        guard reports != nil, let week = WeeklyReports.closes(p) else { return nil }
        let d = WeeklyReports.Due(user: p.user, week: week)
        return due.insert(d).inserted ? WeeklyReports.marker(d) : nil
    }

    /// A week found due in the store (its marker committed earlier), or handed back by the worker.
    mutating func add(_ d: WeeklyReports.Due) { if reports != nil { due.insert(d) } }
}
