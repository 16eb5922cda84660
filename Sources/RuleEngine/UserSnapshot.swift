import MobilityModel
import RuleLanguage

/// One user's engine state as a state store keeps it: the seam between the engine and any store
/// backend. The engine produces it (``Engine/changes(of:)`` for a commit,
/// ``Engine/snapshot(of:)`` for all of it) and restores from it (``Engine/restore(_:)``); a store
/// serialises these fields and nothing else, so a backend is written against this type without
/// reading `UserState` (docs/architecture.md, "The store seam").
///
/// Two parts:
/// - the **head** (calendar to revised days): small, always whole; a store rewrites it on every commit;
/// - the **open days** (days still open to late data, raw values): in a commit only the days that
///   changed since the store last wrote the user, each saying from which value on it changed and
///   how many values the store held, plus ``foldedBefore`` (the days before it left the open days);
///   in a snapshot every open day.
///
/// Invariants a store must keep when it hands a snapshot back: ``foldedDays`` in ascending day
/// order with ``foldedValues`` holding their values in that order (one per mask bit, in bit
/// order); ``openDays`` in ascending day order, each day's values at `start..<start + count` of
/// ``openValues``.
package struct UserSnapshot: Hashable, Sendable {
    /// The user's id.
    package var user: String
    /// The IANA identifier of the user's calendar (an unknown one restores as UTC).
    package var calendar: String
    /// Whether the calendar came from a profile message.
    package var hasProfile: Bool
    /// The care teams of the last accepted profile (empty: none).
    package var careTeams: [String]
    /// The first local day with any data or event.
    package var firstDay: DayNumber?
    /// The last day whose rules have been evaluated.
    package var lastClosedDay: DayNumber?
    /// The daily inputs the folded values belong to (bit i of a folded day's mask: input i).
    package var foldedInputs: [FoldedInput]
    /// The folded days that have values, in day order.
    package var foldedDays: [FoldedDay]
    /// The folded days' values, day after day, in mask-bit order within a day.
    package var foldedValues: [Double]
    /// HealthKit sync identifiers of open-day samples.
    package var syncIndex: [SyncEntry]
    /// Deleted sample ids remembered for the allowed lateness, oldest first.
    package var tombstones: [Tombstone]
    /// Clinical events and annotations, sorted by id.
    package var events: [TimelineEvent]
    /// The alert states other than a never-evaluated inactive one, sorted by rule name.
    package var alerts: [Alert]
    /// Closed days whose data or timeline changed since they were last evaluated, ascending.
    package var revisedDays: [DayNumber]
    /// How the recently closed days changed the alert states, oldest first: what a
    /// re-evaluation of those days starts from (a store written before the log existed has
    /// none: its states re-evaluate from where they are).
    package var alertLog: [AlertLogEntry]
    /// The first day ``alertLog`` covers; nil in a state stored without a log (a store written
    /// before it existed, or with revisions off): the days closed before such a restore cannot
    /// be re-evaluated.
    package var alertLogStart: DayNumber?
    /// Open days (all, or in a commit the changed ones), ascending.
    package var openDays: [OpenDay]
    /// The open days' values (the engine's own array, shared: a commit copies none of it).
    package var openValues: [StoredValue]
    /// A commit's: the store's rows of open days before this day go (they were folded).
    package var foldedBefore: DayNumber?

    /// An empty state of a user (UTC, no history): what a store builds its snapshots from.
    package init(user: String) {
        self.user = user
        calendar = "UTC"
        hasProfile = false
        careTeams = []
        foldedInputs = []
        foldedDays = []
        foldedValues = []
        syncIndex = []
        tombstones = []
        events = []
        alerts = []
        revisedDays = []
        alertLog = []
        openDays = []
        openValues = []
    }

    /// The values of an open day.
    package func values(of day: OpenDay) -> ArraySlice<StoredValue> { openValues[day.start..<(day.start + day.count)] }

    /// A day open to late data: where its values are in ``openValues`` and what changed.
    package struct OpenDay: Hashable, Sendable {
        /// The local day.
        package var day: DayNumber
        /// Its first value's index in ``UserSnapshot/openValues``.
        package var start: Int
        /// How many values it has.
        package var count: Int
        /// The first value (day-relative) that changed since the store last wrote the day; nil
        /// when the store holds it as it is (every day a store loads from its rows).
        package var changedFrom: Int?
        /// How many values the store holds for the day (0 for a day it has no rows of).
        package var storedCount: Int

        package init(day: DayNumber, start: Int, count: Int, changedFrom: Int?, storedCount: Int) {
            self.day = day
            self.start = start
            self.count = count
            self.changedFrom = changedFrom
            self.storedCount = storedCount
        }
    }

    /// A folded day: its day and which inputs have a value (bit i: ``UserSnapshot/foldedInputs``[i]).
    package struct FoldedDay: Hashable, Sendable {
        /// The local day.
        package var day: DayNumber
        /// The inputs with a value.
        package var mask: UInt64

        package init(day: DayNumber, mask: UInt64) {
            self.day = day
            self.mask = mask
        }
    }

    /// A daily input in a stored form of the engine's design: its aggregation as a stable code
    /// (``Reduction``) instead of the rule language's enum.
    package struct FoldedInput: Hashable, Sendable {
        /// A stable code for each aggregation (written as its raw value).
        package enum Reduction: UInt8, Sendable {
            case percentile = 0, mean, median, min, max, sum, count, last
        }

        /// A stable code for each percentile method (written as its raw value).
        package enum Method: UInt8, Sendable {
            case linear = 0, nearestRank
        }

        /// What was measured.
        package var metric: MetricKind
        /// The provenance the input is restricted to; nil: all samples.
        package var provenance: Provenance?
        /// The reduction.
        package var reduction: Reduction
        /// The percentile (0–100), for ``Reduction/percentile`` only.
        package var percentile: Double
        /// The percentile's method, for ``Reduction/percentile`` only.
        package var method: Method

        package init(metric: MetricKind, provenance: Provenance?, reduction: Reduction, percentile: Double = 0, method: Method = .linear) {
            self.metric = metric
            self.provenance = provenance
            self.reduction = reduction
            self.percentile = percentile
            self.method = method
        }
    }

    /// One rule's alert state before a closed day changed it, by the rule's name.
    package struct AlertLogEntry: Hashable, Sendable {
        /// The closed day whose evaluation changed the state.
        package var day: DayNumber
        /// The rule's name.
        package var rule: String
        /// The state before that day's evaluation.
        package var machine: AlertStateMachine

        package init(day: DayNumber, rule: String, machine: AlertStateMachine) {
            self.day = day
            self.rule = rule
            self.machine = machine
        }
    }

    /// One rule's alert state, by the rule's name.
    package struct Alert: Hashable, Sendable {
        /// The rule's name.
        package var rule: String
        /// Its state machine.
        package var machine: AlertStateMachine

        package init(rule: String, machine: AlertStateMachine) {
            self.rule = rule
            self.machine = machine
        }
    }
}

extension UserSnapshot.FoldedInput {
    /// The stored form of a daily input.
    init(_ d: DailyInput) {
        switch d.aggregation {
        case .percentile(let q, let m):
            self.init(
                metric: d.metric, provenance: d.provenance, reduction: .percentile, percentile: q,
                method: m == .linear ? .linear : .nearestRank)
        case .mean: self.init(metric: d.metric, provenance: d.provenance, reduction: .mean)
        case .median: self.init(metric: d.metric, provenance: d.provenance, reduction: .median)
        case .min: self.init(metric: d.metric, provenance: d.provenance, reduction: .min)
        case .max: self.init(metric: d.metric, provenance: d.provenance, reduction: .max)
        case .sum: self.init(metric: d.metric, provenance: d.provenance, reduction: .sum)
        case .count: self.init(metric: d.metric, provenance: d.provenance, reduction: .count)
        case .last: self.init(metric: d.metric, provenance: d.provenance, reduction: .last)
        }
    }

    /// The daily input it stands for.
    var dailyInput: DailyInput {
        let a: Aggregation
        switch reduction {
        case .percentile: a = .percentile(percentile, method == .linear ? .linear : .nearestRank)
        case .mean: a = .mean
        case .median: a = .median
        case .min: a = .min
        case .max: a = .max
        case .sum: a = .sum
        case .count: a = .count
        case .last: a = .last
        }
        return DailyInput(metric: metric, provenance: provenance, aggregation: a)
    }
}
