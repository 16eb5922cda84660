import MobilityModel

/// Builds a ``UserHistory`` from what the engine published for one user: series points (a revised
/// day replaces its earlier value), alert transitions (grouped into episodes by instance id) and
/// the timeline. The daemon's store and the offline report both build histories this way.
public struct HistoryBuilder: Sendable {
    private var history: UserHistory
    private var episodeIndex: [String: Int] = [:]

    /// Starts an empty history of `user`.
    public init(user: String) { history = UserHistory(user: user) }

    /// Records a series point: the latest value of a day wins.
    public mutating func add(_ p: SeriesPoint) {
        history.series[p.name, default: [:]][p.day.dayNumber] = .some(p.value)
        history.units[p.name] = p.unit
    }

    /// Records a series value by its parts (as the store keeps them).
    public mutating func addSeries(_ name: String, day: DayNumber, value: Double?, unit: String) {
        history.series[name, default: [:]][day] = .some(value)
        history.units[name] = unit
    }

    /// Records an alert transition: a firing opens an episode (a reminder updates its summary), a
    /// resolution closes it. Transitions must come in the order they were published.
    public mutating func add(_ a: AlertTransition) {
        let day = a.day.dayNumber
        if let i = episodeIndex[a.id] {
            history.alerts[i].summary = a.summary
            if a.status == .resolved { history.alerts[i].resolvedDay = day }
            return
        }
        var labels: [String: String] = [:]
        for (k, v) in a.labels { labels[k] = v }
        episodeIndex[a.id] = history.alerts.count
        history.alerts.append(AlertEpisode(id: a.id, rule: a.rule, severity: a.severity, firedDay: day,
                                           resolvedDay: a.status == .resolved ? day : nil, summary: a.summary, labels: labels))
    }

    /// Sets the timeline (entries sorted by first day).
    public mutating func setTimeline(_ entries: [TimelineEvent]) {
        history.timeline = entries.sorted { ($0.firstDay, $0.id) < ($1.firstDay, $1.id) }
    }

    /// The history built so far.
    public var result: UserHistory { history }
}
