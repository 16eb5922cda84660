import MobilityModel
import RuleLanguage

/// One stored sample value in a day bucket.
public struct StoredValue: Hashable, Sendable {
    public var id: String
    public var value: Double
    public var end: Timestamp
    public var provenance: Provenance

    /// Creates a stored value.
    public init(id: String, value: Double, end: Timestamp, provenance: Provenance) {
        self.id = id
        self.value = value
        self.end = end
        self.provenance = provenance
    }
}

/// Everything the engine knows about one user. Owned by one shard; never shared.
public struct UserState: Sendable {
    /// The user's id.
    public let user: String
    /// The user's home calendar (profile time zone, else the engine default).
    public var calendar: LocalCalendar
    /// Whether the calendar came from a profile message.
    public var hasProfile = false
    /// The first local day with any data or event; days before it are not evaluated.
    public var firstDay: DayNumber?
    /// The last day whose rules have been evaluated.
    public var lastClosedDay: DayNumber?
    /// Sample values by (metric, day).
    public var buckets: [BucketKey: [StoredValue]] = [:]
    /// Where each sample id lives, for deduplication and deletion.
    public var sampleIndex: [String: BucketKey] = [:]
    /// Sync identifier → (version, sample id), for HealthKit supersession.
    public var syncIndex: [String: (version: Int64, id: String)] = [:]
    /// Clinical events and annotations, by id.
    public var events: [String: TimelineEvent] = [:]
    /// Days of clinical events (segment boundaries), sorted.
    public var boundaries: [DayNumber] = []
    /// Alert state per alert rule name.
    public var alerts: [String: AlertStateMachine] = [:]
    /// Cached daily aggregates: (input index, day) → value; invalidated when a day changes.
    var aggregates: [Int64: Double?] = [:]
    /// Closed days that received late data since they were last published.
    public var revisedDays: Set<DayNumber> = []

    /// Creates an empty state.
    public init(user: String, calendar: LocalCalendar) {
        self.user = user
        self.calendar = calendar
    }

    /// A (metric, day) key.
    public struct BucketKey: Hashable, Sendable {
        public var metric: MetricKind
        public var day: DayNumber

        /// Creates a key.
        public init(metric: MetricKind, day: DayNumber) {
            self.metric = metric
            self.day = day
        }
    }

    mutating func noteDay(_ d: DayNumber) {
        if firstDay == nil || d < firstDay! { firstDay = d }
    }

    /// Forgets the cached aggregates of one day (the key is input index << 32 | day).
    mutating func invalidate(day: DayNumber, inputs: Int) {
        if aggregates.isEmpty { return }
        let d = Int64(UInt32(bitPattern: day))
        for i in 0..<inputs { aggregates.removeValue(forKey: Int64(i) << 32 | d) }
    }

    /// The latest event of a kind on or before a day.
    func latestEvent(_ kind: String, onOrBefore d: DayNumber) -> DayNumber? {
        var best: DayNumber?
        for e in events.values where e.kind == kind && e.category == .clinical && e.firstDay <= d {
            if best == nil || e.firstDay > best! { best = e.firstDay }
        }
        return best
    }

    /// The first day of the segment containing `d` (the latest clinical event on or before it).
    func segmentStart(_ d: DayNumber) -> DayNumber {
        var lo = DayNumber.min
        for b in boundaries where b <= d { lo = b }
        return lo
    }

    /// The first boundary after `d`, if any.
    func nextBoundary(after d: DayNumber) -> DayNumber? { boundaries.first { $0 > d } }

    /// Recomputes the segment boundaries from the clinical events (after a restore).
    public mutating func rebuildBoundaries() {
        boundaries = Array(Set(events.values.filter { $0.category == .clinical }.map(\.firstDay))).sorted()
        aggregates.removeAll()
    }

    /// Annotations overlapping a day range, as `kind first..last` strings, sorted.
    func annotations(from lo: DayNumber, to hi: DayNumber) -> [TimelineEvent] {
        events.values.filter { $0.category == .annotation && $0.firstDay <= hi && $0.lastDay >= lo }
            .sorted { ($0.firstDay, $0.kind, $0.id) < ($1.firstDay, $1.kind, $1.id) }
    }
}
