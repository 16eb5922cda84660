import MobilityModel

/// The lifecycle of one alert for one user: inactive → pending → firing → (resolved or expired) inactive.
///
/// A struct that returns an action; the caller publishes. Time is event time, passed in.
/// An unknown condition (insufficient data) resets a pending alert and holds a firing one; only
/// a false one resolves it. Outside the rule's monitoring window (`during`) nothing starts, a
/// pending alert resets and a firing one expires: it ends, but not as resolved.
/// Instants are always milliseconds; how durations are counted between them is the ``Clock``.
package struct AlertStateMachine: Hashable, Sendable {
    /// How a rule's durations (`for`, `keep_firing_for`, `repeat`, `cooldown`) are counted.
    package enum Clock: Sendable {
        /// Milliseconds of event time (per-sample rules).
        case wall
        /// Local calendar days of a zone (daily rules): `3 d` is three local days, whatever their
        /// hours (23 or 25 at DST changes). A duration that is not whole days is rounded up.
        case days(LocalCalendar)

        /// Whether durations count local days (a daily rule).
        var isDays: Bool { if case .days = self { true } else { false } }

        /// A rule duration in this clock's unit.
        @inline(__always) func span(_ ms: Int64) -> Int64 {
            switch self {
            case .wall: ms
            case .days: ms <= 0 ? 0 : (ms + 86_399_999) / 86_400_000
            }
        }

        /// The time from one instant to another in this clock's unit (local days: the difference
        /// of their day numbers; a daily rule evaluates at local midnights).
        @inline(__always) func elapsed(_ from: Int64, _ to: Int64) -> Int64 {
            switch self {
            case .wall: to - from
            case .days(let c): Int64(c.day(of: Timestamp(milliseconds: to))) - Int64(c.day(of: Timestamp(milliseconds: from)))
            }
        }

        /// The instant a duration (in ms) after `at`: for local days, the local midnight that many days on.
        func instant(_ ms: Int64, after at: Int64) -> Int64 {
            switch self {
            case .wall: at + ms
            case .days(let c): c.startOfDay(c.day(of: Timestamp(milliseconds: at)) + DayNumber(span(ms))).milliseconds
            }
        }
    }

    /// The states, in Prometheus's vocabulary.
    package enum State: Hashable, Sendable {
        case inactive
        /// The condition holds since `activeSince`; waiting for `for` to elapse.
        case pending(activeSince: Int64)
        /// Firing since `firedAt`; `lastTrue` is the last evaluation where the condition held.
        case firing(activeSince: Int64, firedAt: Int64, lastTrue: Int64, lastSent: Int64)
    }

    /// What the caller must do.
    package enum Action: Hashable, Sendable {
        case none
        /// Publish a firing transition.
        case fire(activeSince: Int64, firedAt: Int64)
        /// Publish a reminder that the alert is still firing (same id).
        case repeatFiring(activeSince: Int64, firedAt: Int64)
        /// Publish a resolved transition: the condition was false for `keep_firing_for`.
        case resolve(activeSince: Int64, firedAt: Int64, resolvedAt: Int64)
        /// Publish an expired transition: the monitoring window closed while the alert fired.
        case expire(activeSince: Int64, firedAt: Int64, expiredAt: Int64)
    }

    /// The current state.
    package private(set) var state: State = .inactive
    /// No new firing before this instant (cooldown after a resolve or an expiry), in ms.
    package private(set) var quietUntil: Int64 = .min
    /// The event time of the last evaluation, in ms (older evaluations are ignored).
    package private(set) var lastEvaluated: Int64 = .min

    package init() {}

    /// Restores a saved state.
    package init(state: State, quietUntil: Int64, lastEvaluated: Int64) {
        self.state = state
        self.quietUntil = quietUntil
        self.lastEvaluated = lastEvaluated
    }

    /// Whether the alert is firing.
    package var isFiring: Bool { if case .firing = state { return true } else { return false } }

    /// How much of the condition an evaluation at `at` reads (``evaluate``): nothing when the
    /// evaluation is stale or an inactive alert is in its cooldown; only whether it is true when
    /// inactive or pending (false and unknown act alike there); its value when firing (unknown
    /// holds the alert, false counts towards resolving it). The engine evaluates no more of a
    /// rule than this, so that on most days the lets behind a false first clause are never read.
    package func conditionUse(at: Int64) -> ConditionUse {
        guard at > lastEvaluated else { return .none }
        switch state {
        case .inactive: return at >= quietUntil ? .truth : .none
        case .pending: return .truth
        case .firing: return .value
        }
    }

    /// What ``conditionUse(at:)`` says an evaluation reads of the condition.
    package enum ConditionUse: Hashable, Sendable {
        /// Nothing: any value gives the same action and state.
        case none
        /// Whether it is true: false and unknown give the same action and state.
        case truth
        /// True, false or unknown.
        case value
    }

    /// Feeds one evaluation.
    /// - Parameters:
    ///   - condition: true, false, or nil for unknown (not read when `monitored` is false).
    ///   - monitored: whether the evaluation is inside the rule's monitoring window (`during`
    ///     true; always for a rule without one). Outside, an inactive alert stays so, a pending one
    ///     resets and a firing one expires.
    ///   - at: the event time of the evaluation (ms): the close of the day, or the sample's end.
    ///   - activeSince: when the condition would count as having started (the day's start, or the sample's end).
    ///   - forMs: the rule's `for` (ms): how long the condition must hold before the alert fires.
    ///   - keepFiringForMs: the rule's `keep_firing_for` (ms): how long a firing alert stays firing
    ///     after its condition was last true.
    ///   - repeatMs: the rule's `repeat` (ms): how often a firing alert whose condition is still true
    ///     is published again; 0: never.
    ///   - cooldownMs: the rule's `cooldown` (ms): how long after it resolves or expires nothing new
    ///     starts.
    ///   - clock: how the durations are counted: `.days` for daily rules, `.wall` for per-sample rules.
    package mutating func evaluate(
        _ condition: Bool?, monitored: Bool = true, at: Int64, activeSince: Int64, forMs: Int64, keepFiringForMs: Int64,
        repeatMs: Int64, cooldownMs: Int64, clock: Clock = .wall
    ) -> Action {
        guard at > lastEvaluated else { return .none }
        lastEvaluated = at
        guard monitored else {
            switch state {
            case .inactive: return .none
            case .pending:
                state = .inactive
                return .none
            case .firing(let since, let fired, _, _):
                state = .inactive
                quietUntil = cooldownMs > 0 ? clock.instant(cooldownMs, after: at) : .min
                return .expire(activeSince: since, firedAt: fired, expiredAt: at)
            }
        }
        switch state {
        case .inactive:
            guard condition == true, at >= quietUntil else { return .none }
            // A condition that already spans `for` fires now: a daily rule's day counts whole
            // (`for 1 d` fires on its first true day, `for 3 d` on the third).
            if forMs == 0 || clock.elapsed(activeSince, at) >= clock.span(forMs) {
                state = .firing(activeSince: activeSince, firedAt: at, lastTrue: at, lastSent: at)
                return .fire(activeSince: activeSince, firedAt: at)
            }
            state = .pending(activeSince: activeSince)
            return .none
        case .pending(let since):
            guard condition == true else { state = .inactive; return .none }
            if clock.elapsed(since, at) >= clock.span(forMs) {
                state = .firing(activeSince: since, firedAt: at, lastTrue: at, lastSent: at)
                return .fire(activeSince: since, firedAt: at)
            }
            return .none
        case .firing(let since, let fired, let lastTrue, let lastSent):
            switch condition {
            case true?:
                if repeatMs > 0, clock.elapsed(lastSent, at) >= clock.span(repeatMs) {
                    state = .firing(activeSince: since, firedAt: fired, lastTrue: at, lastSent: at)
                    return .repeatFiring(activeSince: since, firedAt: fired)
                }
                state = .firing(activeSince: since, firedAt: fired, lastTrue: at, lastSent: lastSent)
                return .none
            case nil:
                return .none  // unknown holds a firing alert: missing data never resolves it
            case false?:
                guard clock.elapsed(lastTrue, at) >= clock.span(keepFiringForMs) else { return .none }
                state = .inactive
                quietUntil = cooldownMs > 0 ? clock.instant(cooldownMs, after: at) : .min
                return .resolve(activeSince: since, firedAt: fired, resolvedAt: at)
            }
        }
    }
}
