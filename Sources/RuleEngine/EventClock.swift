import MobilityModel

/// How far one message may move a user's event clock, and what confirms a longer jump.
package struct EventClockPolicy: Hashable, Sendable {
    /// A message reaching at most this far past the user's clock moves it (milliseconds).
    package var maxStepMs: Int64 = 86_400_000
    /// A message reaching further is a claim; this many consecutive such messages (the first
    /// included) confirm the jump.
    package var confirmations: Int = 3

    /// The defaults: a step of one day, confirmed by three consecutive messages.
    package init() {}
}

/// A user's clock in event-clock mode: the latest sample end the user's own traffic confirms.
///
/// A struct whose mutating method returns nothing to publish; the ingestor feeds it, for each
/// samples message, the latest ends of the samples it *added* (a re-sent message adds none and
/// changes nothing), and uses ``now`` as the user's "now".
///
/// * A message whose new samples continue from the clock without a gap longer than
///   ``EventClockPolicy/maxStepMs`` moves it to its latest such end (the common case: one
///   comparison; a sync of several continuous days, the ingestor's `chain`).
/// * A message reaching further is a *claim*: the clock does not follow it (its samples are still
///   accepted and wait on their own days). The clock jumps only when `confirmations` consecutive
///   messages all claim: then to the earliest of the claims, and on through the later claims
///   while each lies within a step of the last (the point the messages agree time has reached).
/// * A message within the step that moves the clock refutes the pending claims (the real data
///   goes on where the clock is); a message entirely before the clock neither confirms nor refutes.
/// * A user's first message starts the clock (there is nothing to check it against).
///
/// So one outlier sample, or a burst of them in one message, closes no day and makes no real
/// sample too late; a real gap costs `confirmations - 1` messages of delay before its days close.
package struct EventClock: Hashable, Sendable {
    /// The confirmed clock; nil before the user's first sample.
    package private(set) var now: Timestamp?
    /// The latest ends (ms) of the consecutive messages that reached past the step, not yet confirmed.
    package private(set) var claims: [Int64]

    /// Creates a clock (restored: the confirmed time and the pending claims).
    package init(now: Timestamp? = nil, claims: [Int64] = []) {
        self.now = now
        self.claims = claims
    }

    /// The latest end a message may have to move the clock without confirmation.
    @inline(__always) package func reach(_ policy: EventClockPolicy) -> Int64 {
        guard let now else { return .max }
        return now.milliseconds > Int64.max - policy.maxStepMs ? .max : now.milliseconds + policy.maxStepMs
    }

    /// Confirms the pending claims at the end of a bounded input, after which no message can
    /// confirm or refute them: the clock moves to the earliest claim and on through the later
    /// ones while each lies within `tolerance` (ms) of the last. A claim is a message's latest
    /// end, so consecutive syncs of several days lie days apart; a claim far beyond them (an
    /// outlier a year ahead) stays pending.
    package mutating func confirmClaims(within tolerance: Int64) {
        guard !claims.isEmpty else { return }
        claims.sort()
        var t = max(now?.milliseconds ?? .min, claims[0]), used = 1
        while used < claims.count, claims[used] - t <= tolerance {
            t = max(t, claims[used])
            used += 1
        }
        now = Timestamp(milliseconds: t)
        claims.removeFirst(used)
    }

    /// Takes one samples message: `inStep`, its latest end at or before ``reach(_:)``, and
    /// `beyond`, its latest end after it (`.min`: none). Returns the clock after it.
    @discardableResult
    package mutating func observe(inStep: Int64, beyond: Int64, policy: EventClockPolicy) -> Timestamp? {
        let current = now?.milliseconds ?? .min
        if beyond == .min {
            if inStep > current {
                now = Timestamp(milliseconds: inStep)
                if !claims.isEmpty { claims.removeAll() }
            }
            return now
        }
        if inStep > current { now = Timestamp(milliseconds: inStep) }
        claims.append(beyond)
        guard claims.count >= max(1, policy.confirmations) else { return now }
        claims.sort()
        var t = max(now?.milliseconds ?? .min, claims[0]), used = 1
        while used < claims.count, claims[used] - t <= policy.maxStepMs {
            t = max(t, claims[used])
            used += 1
        }
        now = Timestamp(milliseconds: t)
        claims.removeFirst(used)
        return now
    }
}
