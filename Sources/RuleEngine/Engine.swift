import MobilityModel
import RuleLanguage

/// Tunables of the engine.
package struct EngineConfiguration: Sendable {
    /// A day is evaluated once `now` passes the next local midnight plus this grace (seconds).
    package var graceSeconds: Int64 = 3600
    /// Samples older than this (relative to now) are rejected as too late (seconds).
    package var allowedLatenessSeconds: Int64 = 7 * 86_400
    /// Samples ending more than this after now are rejected as in the future (clock-skew guard).
    package var maxFutureSeconds: Int64 = 600
    /// The calendar of users without a profile.
    package var defaultCalendar: LocalCalendar = .utc
    /// Whether recording rules produce series outputs.
    package var publishSeries = true
    /// Timeline entries from the wire may start at most this many days before the user's today
    /// (`date_out_of_range`); the days an entry makes the engine republish are bounded by the
    /// history it still holds, whatever its date.
    package var maxEventAgeDays: Int = 730
    /// The most timeline entries (clinical events and annotations) one user may hold; a new one
    /// beyond is refused (`too_many_entries`), replacing one by id still works.
    package var maxTimelineEntries: Int = 500
    /// The most deleted sample ids (``Tombstone``s) one user's state remembers; beyond, the
    /// oldest eighth is forgotten. 16 bytes each: at most 32 KiB a user.
    package var maxTombstones: Int = 2048
    /// How many closed days back a revision re-evaluates the user's alert states: a timeline
    /// entry, late sample or deletion dated on a closed day rolls the alert states back to that
    /// day (at most this many days before the last closed day) and evaluates the days since
    /// again. Retention keeps the history those days' windows read. 0: alerts are never
    /// re-evaluated (series still are republished).
    package var revisionDays: Int = 14
    /// Fold days past the allowed lateness into daily-input values and drop history no rule can
    /// reach any more. Off only to test that folding and compaction change nothing.
    package var retention = true

    /// The defaults.
    package init() {}
}

/// Something the engine asks the outside world to publish.
package enum EngineOutput: Hashable, Sendable {
    case alert(AlertTransition)
    case series(SeriesPoint)
    case rejected(user: String?, topic: String, Rejection)
}

/// What happened to an ingested sample.
package enum IngestOutcome: Hashable, Sendable {
    case accepted
    /// Already seen (same id): harmless re-delivery.
    case duplicate
    /// Replaced an older version with the same sync identifier.
    case superseded
    /// An older sync version than the one stored: ignored.
    case stale
    /// Its id was deleted before it arrived (a ``Tombstone``): dropped. A newer sync version
    /// still replaces the older one it supersedes, as it would have before its deletion.
    case deleted
    case rejected(Rejection)
}

/// The rule engine: per-user state (open days raw, older days folded), windows, rules and alert state machines.
///
/// Pure: no I/O, no clock. Every call takes `now` (event or wall time) and appends what must be
/// published to `out`. One engine is owned by one shard.
package struct Engine: Sendable {
    /// The checked rules.
    package var program: Program { closer.program }
    /// Tunables.
    package var configuration: EngineConfiguration {
        didSet {
            closer = DayCloser(program: closer.program, configuration: configuration)
            let firing = evaluator.firing
            evaluator = Evaluator(rules: closer)
            evaluator.firing = firing
        }
    }
    /// The alert names in rule order: the array every user's state shares (pass it to the state
    /// store's `load` so that restored states share it too).
    package var alertNames: [String] { closer.alertNames }
    /// Every user's state, in no particular order.
    package var allStates: [UserState] { states }
    /// How many users the engine holds.
    package var userCount: Int { states.count }
    /// One user's state.
    package func state(of user: String) -> UserState? { slots[user].map { states[$0] } }
    /// One user's calendar (without copying the state).
    package func calendar(of user: String) -> LocalCalendar? { slots[user].map { states[$0].calendar } }
    /// The care teams of a user's last accepted profile (empty for an unknown user or none named).
    package func careTeams(of user: String) -> [String] { slots[user].map { states[$0].careTeams } ?? [] }
    /// How many users have each alert firing (same order as ``alertNames``): a function of the
    /// users' alert states, kept as they change, counted again on reload and restore.
    package var firingCounts: [Int] { evaluator.firing }

    /// ``firingCounts`` computed by visiting every user's alert states.
    package func countFiring() -> [Int] {
        var n = Array(repeating: 0, count: closer.alertNames.count)
        for st in states { for j in st.alertStates.indices where st.alertStates[j].isFiring { n[j] += 1 } }
        return n
    }

    /// User id → index in `states`. Users are never removed.
    var slots: [String: Int] = [:]
    var states: [UserState] = []
    /// Slots in user-id order, the order in which ``advance(to:)`` closes days (deterministic
    /// output); `unordered` holds the slots created since it was last merged.
    var order: [Int] = []
    var unordered: [Int] = []
    /// The last user looked up: consecutive calls for one user (ingest, then advance) skip the hash.
    var lastUser = ""
    var lastSlot = -1

    @inline(__always)
    mutating func slot(_ id: String, create: Bool) -> Int? {
        if lastSlot >= 0, lastUser == id { return lastSlot }
        if let k = slots[id] {
            lastUser = id
            lastSlot = k
            return k
        }
        guard create else { return nil }
        var st = UserState(user: id, calendar: configuration.defaultCalendar)
        st.alignAlerts(to: closer.alertNames)
        let k = insert(st)
        lastUser = id
        lastSlot = k
        return k
    }

    /// Adds a user not in the table yet; returns its slot.
    mutating func insert(_ st: consuming UserState) -> Int {
        let k = states.count
        slots[st.user] = k
        unordered.append(k)
        states.append(st)
        return k
    }
    /// Users whose state changed since the last ``takeTouched()`` (each flagged in its state, so
    /// marking costs no hashing on the hot path).
    var touchedList: [Int] = []

    /// Returns and clears the set of users whose state changed.
    package mutating func takeTouched() -> Set<String> {
        var users = Set<String>(minimumCapacity: touchedList.count)
        takeTouched(into: &users)
        return users
    }

    /// Adds the users whose state changed to `users` and clears the list (no set built per call).
    package mutating func takeTouched(into users: inout Set<String>) {
        for k in touchedList {
            states[k].touched = false
            users.insert(states[k].user)
        }
        touchedList.removeAll(keepingCapacity: true)
    }

    /// The evaluator, lent to each day close and per-sample rule (one per set of rules, not one a user).
    var evaluator: Evaluator

    /// The rules and configuration, shared by reference: the hot path copies one pointer, not a `Program`.
    var closer: DayCloser

    /// Bit m: some alert is triggered by samples of metric m.
    var sampleMask: UInt64 = 0

    package init(program: Program, configuration: EngineConfiguration = EngineConfiguration()) {
        self.configuration = configuration
        closer = DayCloser(program: program, configuration: configuration)
        evaluator = Evaluator(rules: closer)
        sampleMask = Engine.sampleMask(program)
    }

    static func sampleMask(_ p: Program) -> UInt64 {
        var m: UInt64 = 0
        for a in p.alerts { if case .sample(let k) = a.trigger { m |= 1 << UInt64(k.rawValue) } }
        return m
    }

    /// Runs `body` on a user's state in place (one hash lookup, no copy), creating it if new, and
    /// marks the user touched.
    mutating func withUser<R>(_ id: String, _ body: (inout UserState) -> R) -> R {
        let k = slot(id, create: true)!
        let r = body(&states[k])
        markTouched(k)
        return r
    }

    @inline(__always) mutating func markTouched(_ k: Int) {
        if !states[k].touched {
            states[k].touched = true
            touchedList.append(k)
        }
    }
}

/// A user's state made from a ``UserSnapshot`` by ``Engine/preparer``, for the engine's `restore(_:)`.
package struct PreparedUser: Sendable {
    var state: UserState
}
