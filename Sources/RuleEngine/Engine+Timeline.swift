import MobilityModel

extension Engine {
    /// The user's clinical events and annotations, sorted by first day and id (empty for an
    /// unknown user): what the care-team history records of the timeline.
    public func timeline(of user: String) -> [TimelineEvent] {
        guard let st = state(of: user) else { return [] }
        return st.events.values.sorted { ($0.firstDay, $0.id) < ($1.firstDay, $1.id) }
    }
}
