/// Building a history from what the engine publishes (an offline replay, or the daemon's outputs).
extension UserHistory {
    /// Records a published series point: its value converted to SI from its unit, replacing the
    /// day's earlier value (a `revised` point is the day's latest).
    package mutating func record(_ p: SeriesPoint) {
        let unit = MeasureUnit.rule(p.unit) ?? .one
        series[p.name, default: [:]][p.day.dayNumber] = .some(p.value.map { unit.si($0) })
        units[p.name] = p.unit
    }

    /// Records an alert transition: a firing opens an episode, a reminder adds what it said, a
    /// resolution or an expiry closes it, a withdrawal marks it withdrawn (closing it if it was
    /// still active). An end whose firing was never seen (history begun while the alert fired) is
    /// an episode of that one day.
    package mutating func record(_ t: AlertTransition) {
        let day = t.day.dayNumber
        let text = AlertEpisode.Text(day: day, firing: t.status == .firing, headline: t.headline, details: t.details)
        if let i = alerts.lastIndex(where: { $0.id == t.id }) {
            alerts[i].texts.append(text)
            if t.status == .firing && !t.isRepeat {
                // Fires again with its id: a revision found it goes on after an end it had been
                // given (or supports a withdrawn one again).
                alerts[i].endedDay = nil
                alerts[i].expired = false
                alerts[i].withdrawnDay = nil
            } else if t.isWithdrawal {
                alerts[i].withdrawnDay = day
                if alerts[i].endedDay == nil { alerts[i].endedDay = day }
            } else if t.status.isEnded {
                alerts[i].endedDay = day
                alerts[i].expired = t.status == .expired
            }
            return
        }
        var e = AlertEpisode(
            id: t.id, rule: t.rule, severity: t.severity, sinceDay: t.activeSinceDay.dayNumber, firedDay: t.firedDay.dayNumber,
            endedDay: t.status.isEnded ? day : nil, headline: t.headline, labels: Dictionary(t.labels, uniquingKeysWith: { a, _ in a }),
            expired: t.status == .expired)
        if t.isWithdrawal { e.withdrawnDay = day }
        e.texts = [text]
        alerts.append(e)
    }

    /// Records a timeline entry, replacing one with the same id; the timeline stays sorted by first day.
    package mutating func record(_ e: TimelineEvent) {
        timeline.removeAll { $0.id == e.id }
        let at = timeline.firstIndex { ($0.firstDay, $0.id) > (e.firstDay, e.id) } ?? timeline.count
        timeline.insert(e, at: at)
    }
}
