import StateStore

/// Where a shard sends what the engine wants published.
protocol OutputSink: Sendable {
    /// Publishes committed outbox items in order; returns how many publish attempts failed (the
    /// items stay queued for a retry unless they can never be sent).
    func publish(_ items: [StateStore.OutboxItem]) -> Int
}
