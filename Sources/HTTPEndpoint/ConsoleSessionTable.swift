/// The console's signed-in sessions and its sign-in lockout, as a value: every method is given
/// the time (milliseconds since the epoch) and the random values it needs, so tests drive it
/// with a table of times and ``ConsoleSessions`` holds it under a lock with the wall clock.
///
/// - A session ends after ``Policy/idleMilliseconds`` without a request, or
///   ``Policy/absoluteMilliseconds`` after sign-in whatever the activity, or at sign-out.
/// - A login is locked for ``Policy/lockMilliseconds`` after ``Policy/failuresBeforeLock``
///   failed sign-ins in a row, counted per login, known or not; while locked, no password is
///   checked. A lockout alone does not tell a staff login from a made-up one, but a flood of
///   made-up logins between a prober's failures does (a staff login's count survives it, a
///   made-up one's is forgotten; docs/security.md). A success clears the count, and so
///   do a lock's end and ``Policy/lockMilliseconds`` without a failure (typos weeks apart never lock).
/// - The failures of the staff file's logins are always remembered (their number is bounded by
///   the file): made-up logins can neither flush a person's count nor keep a person from trying.
///   Those of other logins are remembered for at most ``Policy/maximumTrackedLogins`` logins; to
///   make room, the one whose last failure is oldest is forgotten (in constant amortised time), so
///   a flood of made-up logins costs only the lockout of made-up logins.
package struct ConsoleSessionTable: Sendable {
    /// The limits.
    package struct Policy: Sendable {
        /// A session unused this long ends (default 30 minutes).
        package var idleMilliseconds: Int64 = 30 * 60_000
        /// A session ends this long after sign-in (default 12 hours: a shift).
        package var absoluteMilliseconds: Int64 = 12 * 3_600_000
        /// Failed sign-ins in a row that lock a login (default 5).
        package var failuresBeforeLock = 5
        /// How long a lock lasts (default 15 minutes).
        package var lockMilliseconds: Int64 = 15 * 60_000
        /// The most sessions at once (the oldest unused one ends for a new one).
        package var maximumSessions = 10_000
        /// The most logins outside the staff file whose failures are remembered at once (the one
        /// that failed longest ago is forgotten to make room).
        package var maximumTrackedLogins = 10_000
        /// Defaults.
        package init() {}
    }

    /// A signed-in person.
    package struct Session: Sendable, Equatable {
        /// Who signed in.
        package var login: String
        /// Their care teams (the staff file's `teams=`).
        package var teams: [String]
        /// The token every form of the session carries (hex).
        package var csrf: String
        /// When they signed in.
        package var signedInAt: Int64
        /// Their last request.
        package var lastSeen: Int64
    }

    /// What the table knows of a login's failed sign-ins.
    struct Failures: Sendable {
        var count: Int
        var last: Int64
        var lockedUntil: Int64?
    }

    /// The limits in force.
    package let policy: Policy
    /// The staff file's logins: their failures are kept in `staffFailures`, never evicted.
    private let staff: Set<String>
    private var sessions: [String: Session] = [:]
    private var staffFailures: [String: Failures] = [:]
    /// The failures of logins not in the staff file, at most ``Policy/maximumTrackedLogins``.
    private var otherFailures: [String: Failures] = [:]
    /// Every failure of `otherFailures` in the order recorded (login, time), read from `head`: the
    /// oldest entry whose time is still its login's `last` is the login that failed longest ago.
    private var failureOrder: [(login: String, at: Int64)] = []
    private var head = 0

    /// An empty table for the people of `staff` (the staff file's logins).
    package init(policy: Policy = Policy(), staff: Set<String> = []) {
        self.policy = policy
        self.staff = staff
    }

    /// Sessions open now (ended ones are removed as they are met, and by ``sweep(now:)``).
    package var count: Int { sessions.count }

    /// Logins outside the staff file whose failures are remembered now.
    package var trackedOtherLogins: Int { otherFailures.count }

    /// Until when `login` is locked (nil: it may try). A lock that has ended, and a count whose last
    /// failure is older than the lock period, are forgotten.
    package mutating func lockedUntil(_ login: String, now: Int64) -> Int64? {
        guard let f = failures(of: login) else { return nil }
        if let until = f.lockedUntil, until > now { return until }
        if f.lockedUntil != nil || isStale(f.last, now: now) { setFailures(nil, of: login) }
        return nil
    }

    /// Records a failed sign-in of `login`; returns until when it is now locked, if this locked it.
    package mutating func failed(_ login: String, now: Int64) -> Int64? {
        var f = failures(of: login) ?? Failures(count: 0, last: now, lockedUntil: nil)
        if isStale(f.last, now: now) { f = Failures(count: 0, last: now, lockedUntil: nil) }
        f.count += 1
        f.last = now
        if f.count >= policy.failuresBeforeLock { f.lockedUntil = now + policy.lockMilliseconds }
        if staff.contains(login) {
            staffFailures[login] = f
        } else {
            if otherFailures[login] == nil {
                while otherFailures.count >= max(policy.maximumTrackedLogins, 1) { forgetOldestOther() }
            }
            otherFailures[login] = f
            failureOrder.append((login, now))
            compactOrder()
        }
        return f.lockedUntil
    }

    private func failures(of login: String) -> Failures? {
        staff.contains(login) ? staffFailures[login] : otherFailures[login]
    }

    private mutating func setFailures(_ f: Failures?, of login: String) {
        if staff.contains(login) { staffFailures[login] = f } else { otherFailures[login] = f }
    }

    /// Whether a failure at `last` is old enough at `now` to be forgotten.
    private func isStale(_ last: Int64, now: Int64) -> Bool { now - last >= policy.lockMilliseconds }

    /// Forgets the login outside the staff file that failed longest ago.
    private mutating func forgetOldestOther() {
        while head < failureOrder.count {
            let e = failureOrder[head]
            head += 1
            // An entry superseded by a later failure of its login, or of a login forgotten since, is skipped.
            if let f = otherFailures[e.login], f.last == e.at {
                otherFailures[e.login] = nil
                return
            }
        }
        // Unreachable while every remembered login has its entry; never loop on a broken invariant.
        otherFailures.removeAll()
    }

    /// Drops the consumed and superseded entries of the order once they outnumber the live ones,
    /// so that its size stays within a few times the tracked logins (constant amortised time).
    private mutating func compactOrder() {
        guard failureOrder.count > 2 * max(otherFailures.count, 1024) else { return }
        failureOrder = failureOrder[head...].filter { otherFailures[$0.login]?.last == $0.at }
        head = 0
    }

    /// Opens a session `id` for `login` (a successful sign-in: the login's failures are cleared).
    package mutating func open(id: String, login: String, teams: [String], csrf: String, now: Int64) {
        setFailures(nil, of: login)
        sweep(now: now)
        if sessions.count >= policy.maximumSessions, let oldest = sessions.min(by: { $0.value.lastSeen < $1.value.lastSeen }) {
            sessions[oldest.key] = nil
        }
        sessions[id] = Session(login: login, teams: teams, csrf: csrf, signedInAt: now, lastSeen: now)
    }

    /// The live session `id` (its last use becomes `now`), nil when there is none or it has ended
    /// (then it is removed).
    package mutating func session(_ id: String, now: Int64) -> Session? {
        guard var s = sessions[id] else { return nil }
        guard !isOver(s, now: now) else {
            sessions[id] = nil
            return nil
        }
        s.lastSeen = now
        sessions[id] = s
        return s
    }

    /// Ends session `id` (sign-out); whether there was one.
    @discardableResult
    package mutating func close(_ id: String) -> Bool { sessions.removeValue(forKey: id) != nil }

    /// Removes every ended session.
    package mutating func sweep(now: Int64) {
        sessions = sessions.filter { !isOver($0.value, now: now) }
    }

    private func isOver(_ s: Session, now: Int64) -> Bool {
        now - s.lastSeen >= policy.idleMilliseconds || now - s.signedInAt >= policy.absoluteMilliseconds
    }
}
