import MobilityModel
import RuleLanguage

/// Everything the engine knows about one user. Owned by one shard; never shared.
///
/// Memory is the product's sizing unit, so history is kept in two forms: days still open to late
/// data hold raw values; older days are folded into the daily-input values the rules read
/// (docs/benchmarks.md, "Memory per user", has the arithmetic). The small fields sit together,
/// without padding between them: the state is copied whole on some paths (a sample's ingest), and
/// at 256 bytes or less that copy is one of memcpy's cheaper sizes (a test keeps it there).
package struct UserState: Sendable {
    /// The user's id.
    package let user: String
    /// The user's home calendar (profile time zone, else the engine default).
    package var calendar: LocalCalendar
    /// The care teams the last accepted profile named. The engine never reads them: it keeps them
    /// with the profile so that they survive a restart with the rest of the user's state.
    package var careTeams: [String] = []
    /// The first local day with any data or event; days before it are not evaluated.
    package var firstDay: DayNumber?
    /// The last day whose rules have been evaluated.
    package var lastClosedDay: DayNumber?
    /// Whether the calendar came from a profile message.
    package var hasProfile = false
    /// Whether the engine has the user in its touched list.
    var touched = false
    /// Days open to late data, sorted by day.
    package internal(set) var openDays: [OpenDay] = []
    /// The open days' values, day after day (one allocation for the week of raw values a user
    /// holds, grown by an eighth at a time).
    package internal(set) var openValues: [StoredValue] = []
    /// The open days' daily inputs, `cacheWidth` a day (input index within the day's row):
    /// `notComputed` until computed, NaN when the day has none. Empty until a day close needs it.
    var inputCache: [Double] = []
    /// The inputs a day of ``inputCache`` (32 bits, beside ``alertLogStart``: the state stays
    /// within 256 bytes).
    private var cacheWidth32: Int32 = 0
    var cacheWidth: Int {
        get { Int(cacheWidth32) }
        set { cacheWidth32 = Int32(newValue) }
    }
    /// The first day ``alertLog`` covers: a revision never re-evaluates an earlier day, whose
    /// starting states the log does not hold (days closed before the user's state was restored
    /// from a store without a log, before the rules were reloaded, or past the revision window).
    /// `.min` while no day has closed with the log on.
    package var alertLogStart: DayNumber = .min
    /// Folded days, all before the first open day, as a table: a row per day, a column per daily
    /// input that has a value on some folded day (bit i of `foldedColumns`: input i of
    /// `foldedInputs`, columns in input order), a cell of no value where the day has none.
    /// Consecutive days are consecutive rows; `foldedRuns` says which day each run of rows starts
    /// at (a gap between days with data is filled with empty rows while they cost no more than a
    /// run's header, a longer one starts a run). Each column has a cell width (``FoldedCell``):
    /// with data every day that is 8 bytes a day for a percentile, 1 for a count, and one run.
    package internal(set) var foldedRuns: [FoldedRun] = []
    /// The folded table's columns and the width of each one's cells.
    package internal(set) var foldedLayout = FoldedLayout()
    /// The folded table, row after row, `foldedLayout.stride` bytes a row.
    package internal(set) var foldedCells: [UInt8] = []
    /// The daily inputs the folded values belong to (the program's when they were folded).
    package var foldedInputs: [DailyInput] = []
    /// HealthKit sync identifiers of open-day samples.
    package var syncIndex: [SyncEntry] = []
    /// Deleted sample ids remembered for the allowed lateness, oldest first (``Tombstone``).
    package var tombstones: [Tombstone] = []
    /// Clinical events and annotations, by id.
    package var events: [String: TimelineEvent] = [:]
    /// Days of clinical events (segment boundaries), sorted.
    package var boundaries: [DayNumber] = []
    /// Alert rule names, in the rules' order (the engine's array, shared: one reference a user).
    package var alertNames: [String] = []
    /// Alert state per rule, aligned with `alertNames`: read by index on every evaluation, no
    /// hashing of rule names.
    package var alertStates: [AlertStateMachine] = []

    /// Alert state by rule name; rules never evaluated for the user are absent.
    package var alerts: [String: AlertStateMachine] {
        get {
            var d: [String: AlertStateMachine] = [:]
            for (n, sm) in zip(alertNames, alertStates) where sm != AlertStateMachine() { d[n] = sm }
            return d
        }
        set {
            alertNames = newValue.keys.sorted()
            alertStates = alertNames.map { newValue[$0]! }
        }
    }

    /// Closed days whose data or timeline changed since they were last evaluated (late samples,
    /// deletions, timeline entries dated on or before them): their series are republished and
    /// the user's alert states re-evaluated from the first of them.
    package var revisedDays: Set<DayNumber> = []
    /// How the recently closed days changed the alert states (``AlertLogEntry``), oldest first.
    package var alertLog: [AlertLogEntry] = []
    /// Until this instant (ms) no further day of the user can close: the check that runs after
    /// every sample is one comparison instead of a calendar lookup. Not stored; `.min` = unknown.
    var closeCheckUntil: Int64 = .min
    /// The open days' sample ids, as a Bloom filter (see ``IDFilter``). Not stored: rebuilt on
    /// restore and when it fills.
    var idFilter = IDFilter()
    /// Days before this were folded since the state store last wrote the user: their rows go.
    var foldedBefore: DayNumber?

    /// Re-aligns the alert states with a list of rule names: a rule keeps its state by name,
    /// a new rule starts inactive, a removed rule's state goes (Prometheus's CopyState on reload).
    mutating func alignAlerts(to names: [String]) {
        if alertNames == names { alertNames = names; return }  // same names: share the engine's array
        // A linear search per name: a few rules, and comparing names is cheaper than hashing them.
        var states = [AlertStateMachine](repeating: AlertStateMachine(), count: names.count)
        for (k, n) in names.enumerated() {
            if let i = alertNames.firstIndex(of: n) { states[k] = alertStates[i] }
        }
        if !alertLog.isEmpty {
            let old = alertNames
            alertLog = alertLog.compactMap { e in
                guard let k = names.firstIndex(of: old[Int(e.rule)]) else { return nil }
                return AlertLogEntry(day: e.day, rule: Int32(k), before: e.before)
            }
        }
        alertStates = states
        alertNames = names
    }

    /// Starts the alert log afresh after the last closed day: the days closed so far were
    /// evaluated under other rules (a reload), so no revision may re-evaluate them.
    mutating func startAlertLog() {
        alertLog = []
        if let closed = lastClosedDay { alertLogStart = closed + 1 }
    }

    /// Forgets what the state store has written (called after a successful commit).
    mutating func markPersisted() {
        for i in openDays.indices where openDays[i].dirty {
            openDays[i].changedFrom = -1
            openDays[i].storedCount = openDays[i].count
        }
        foldedBefore = nil
    }

    /// The cache marker for "not computed yet" (a NaN with a payload; a day without a value is plain NaN).
    static let notComputed = Double(bitPattern: 0x7FF8_0000_0000_0BAD)

    package init(user: String, calendar: LocalCalendar) {
        self.user = user
        self.calendar = calendar
    }

    /// Forgets every cached daily input (rules or calendar changed).
    mutating func clearCaches() {
        closeCheckUntil = .min
        inputCache = []
        cacheWidth = 0
    }

    mutating func noteDay(_ d: DayNumber) {
        if firstDay == nil || d < firstDay! { firstDay = d }
    }
}
