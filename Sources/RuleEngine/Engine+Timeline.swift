import MobilityModel

extension Engine {
    /// The user's clinical events and annotations, sorted by first day and id (empty for an
    /// unknown user): what the care-team history records of the timeline.
    package func timeline(of user: String) -> [TimelineEvent] {
        guard let st = state(of: user) else { return [] }
        return st.events.values.sorted { ($0.firstDay, $0.id) < ($1.firstDay, $1.id) }
    }

    /// The user's entry with this id, if the user holds one.
    package func entry(_ id: String, of user: String) -> TimelineEvent? { state(of: user)?.events[id] }

    /// How many days back from the last closed day an entry republishes series: the rules'
    /// look-back plus the allowed lateness (the days the engine still holds data of).
    var heldDays: Int64 { configuration.allowedLatenessSeconds / 86_400 + Int64(program.lookbackDays) + 2 }

    /// Removes the user's entry with this id (a retraction); false when the user holds none (nothing
    /// changes then). The held days from the entry's first day on are marked revised, as when an
    /// entry is recorded: a clinical event's removal joins the segments it split, an annotation's
    /// gives back the days an `excluding:` window left out, and what the alerts said of them is
    /// quoted from the timeline.
    @discardableResult
    package mutating func retract(event id: String, user: String) -> Bool {
        guard state(of: user)?.events[id] != nil else { return false }
        let held = heldDays, revisionDays = configuration.revisionDays
        withUser(user) { st in
            guard let e = st.events.removeValue(forKey: id) else { return }
            st.rebuildBoundaries()
            st.reviseDays(from: e.firstDay, segments: e.category == .clinical, held: held, revisionDays: revisionDays)
        }
        return true
    }
}
