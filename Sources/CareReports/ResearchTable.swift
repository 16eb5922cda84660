import MobilityModel

/// The research export's table (`mobilityctl export`, docs/research-export.md): one row per user
/// and local day, with every series the history holds in its stored unit, the clinical events
/// and annotations of that day, and the alerts firing on it.
///
/// A user's rows run from the first to the last day the history holds for them (a day with series
/// values, or the first day of a timeline entry), within the range asked for, one row a day: a
/// day in between without series (`recorded` 0) still has its row, so that a gap reads as
/// missing, never as a skipped row. Values are those the history API gives (the stored value in
/// the series' unit, rounded to 1e-6), written with a `.` decimal point whatever the locale;
/// unknown is an empty cell. Timeline entries' notes are not exported (free text that may name
/// people); who entered an entry is.
package struct ResearchTable: Sendable {
    /// The series columns, in order, with the unit their values are in.
    package let series: [(name: String, unit: String)]

    /// A table of these series (``StateStore/historySeries()`` order).
    package init(series: [(name: String, unit: String)]) { self.series = series }

    /// The columns before the series.
    package static let leadingColumns = ["user", "day", "recorded"]
    /// The columns after the series: clinical events starting that day, annotations covering it.
    package static let timelineColumns = [
        "clinical_events", "clinical_event_ids", "clinical_events_entered_by", "annotations", "annotation_ids", "annotations_entered_by"
    ]

    /// The columns after the timeline: the alerts firing that day.
    package static let alertColumns = ["alerts_firing", "alert_ids"]

    /// The header row's fields.
    package var header: [String] { Self.leadingColumns + series.map(\.name) + Self.timelineColumns + Self.alertColumns }

    /// The value of series `name` on `day` as the history API gives it (in the series' stored
    /// unit, rounded to 1e-6), nil when missing or not recorded.
    package static func value(_ h: UserHistory, _ name: String, on day: DayNumber) -> Double? {
        guard let v = h.series[name]?[day] ?? nil else { return nil }
        return UserHistory.shown(v, in: h.unit(of: name))
    }

    /// The user's rows from `from` through `through` (fields as ``CSVText/record(_:)`` takes them).
    /// `h` holds the series of at least those days and the whole timeline.
    package func rows(_ h: UserHistory, from: DayNumber, through: DayNumber) -> [[String?]] {
        var recorded = Set<DayNumber>()
        for days in h.series.values { for d in days.keys where d >= from && d <= through { recorded.insert(d) } }
        let starts = h.timeline.map(\.firstDay).filter { $0 >= from && $0 <= through }
        let held = Array(recorded) + starts
        guard let first = held.min(), let last = held.max() else { return [] }
        let timeline = h.timeline.sorted { ($0.firstDay, $0.id) < ($1.firstDay, $1.id) }
        // An alert fires from the day it fired until the day before it ended, and always on the
        // day it fired (one that ended that same day included); one withdrawn (shown by late data
        // not to hold) is left out, as its band is on the pages.
        let alerts = h.alerts.filter { $0.withdrawnDay == nil }.sorted { ($0.rule, $0.id) < ($1.rule, $1.id) }
        var rows: [[String?]] = []
        rows.reserveCapacity(Int(last - first) + 1)
        for day in first...last {
            var row: [String?] = [h.user, CivilDate(dayNumber: day).description, recorded.contains(day) ? "1" : "0"]
            for s in series { row.append(Self.value(h, s.name, on: day).map(JSONWriter.format)) }
            let clinical = timeline.filter { $0.category == .clinical && $0.firstDay == day }
            let annotations = timeline.filter { $0.category == .annotation && $0.firstDay <= day && day <= $0.lastDay }
            for entries in [clinical, annotations] {
                row.append(CSVText.list(entries.map(\.kind)))
                row.append(CSVText.list(entries.map(\.id)))
                row.append(CSVText.list(entries.map { $0.entered?.by ?? "" }))
            }
            let firing = alerts.filter { $0.firedDay == day || ($0.firedDay < day && day < ($0.endedDay ?? .max)) }
            row.append(CSVText.list(firing.map(\.rule)))
            row.append(CSVText.list(firing.map(\.id)))
            rows.append(row)
        }
        return rows
    }
}
