import MobilityModel
import MobilityWire
import StateStore

/// Gathers a shard's series points into one message per user-day (``DailySeries``, on
/// `{root}/users/{user}/series`). The engine emits a day's series one after another, so a
/// message is complete when a point of another user, day or revision comes, or the batch ends.
struct SeriesBundler {
    let layout: TopicLayout
    private var open: DailySeries?

    /// Creates a bundler for a shard's topics.
    init(layout: TopicLayout) { self.layout = layout }

    /// Adds a point; returns the finished message of the previous user-day, if this point starts another.
    mutating func add(_ p: SeriesPoint) -> StateStore.OutboxItem? {
        if let o = open, o.holds(p) {
            open!.values.append((p.name, p.value, p.unit))
            return nil
        }
        let done = finish()
        open = DailySeries(user: p.user, day: p.day, revised: p.revised, values: [(p.name, p.value, p.unit)])
        return done
    }

    /// The message being gathered, finished (nil when none).
    mutating func finish() -> StateStore.OutboxItem? {
        guard let o = open else { return nil }
        open = nil
        return .init(topic: layout.series(o.user), payload: o.jsonBytes, retain: false)
    }
}
