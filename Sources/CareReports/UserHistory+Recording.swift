import MobilityModel

/// Building a history from what the engine publishes (an offline replay, or the daemon's outputs).
extension UserHistory {
    /// Records a published series point: its value converted to SI from its unit, replacing the
    /// day's earlier value (a `revised` point is the day's latest).
    public mutating func record(_ p: SeriesPoint) {
        let unit = MeasureUnit.rule(p.unit) ?? .one
        series[p.name, default: [:]][p.day.dayNumber] = .some(p.value.map { unit.si($0) })
        units[p.name] = p.unit
    }

    /// Records an alert transition: a firing opens an episode, a reminder updates its summaries,
    /// a resolution or an expiry closes it. An end whose firing was never seen (history begun
    /// while the alert fired) is an episode of that one day.
    public mutating func record(_ t: AlertTransition) {
        let day = t.day.dayNumber
        if let i = alerts.lastIndex(where: { $0.id == t.id }) {
            alerts[i].summary = t.summary
            if t.status.isEnded {
                alerts[i].endedDay = day
                alerts[i].expired = t.status == .expired
            } else {
                alerts[i].firedSummary = t.summary
            }
            return
        }
        let labels = Dictionary(t.labels, uniquingKeysWith: { a, _ in a })
        alerts.append(
            AlertEpisode(
                id: t.id, rule: t.rule, severity: t.severity, firedDay: day, endedDay: t.status.isEnded ? day : nil,
                summary: t.summary, labels: labels, firedSummary: t.status == .firing ? t.summary : nil, expired: t.status == .expired))
    }

    /// Records a timeline entry, replacing one with the same id; the timeline stays sorted by first day.
    public mutating func record(_ e: TimelineEvent) {
        timeline.removeAll { $0.id == e.id }
        let at = timeline.firstIndex { ($0.firstDay, $0.id) > (e.firstDay, e.id) } ?? timeline.count
        timeline.insert(e, at: at)
    }
}
