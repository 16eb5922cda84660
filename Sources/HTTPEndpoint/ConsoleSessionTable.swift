/// The console's signed-in sessions and its sign-in lockout, as a value: every method is given
/// the time (milliseconds since the epoch) and the random values it needs, so tests drive it
/// with a table of times and ``ConsoleSessions`` holds it under a lock with the wall clock.
///
/// - A session ends after ``Policy/idleMilliseconds`` without a request, or
///   ``Policy/absoluteMilliseconds`` after sign-in whatever the activity, or at sign-out.
/// - A login is locked for ``Policy/lockMilliseconds`` after ``Policy/failuresBeforeLock``
///   failed sign-ins in a row (counted per login, known or not, so a lockout says nothing of
///   which logins exist); while locked, no password is checked. A success clears the count, and so
///   do a lock's end and ``Policy/lockMilliseconds`` without a failure (typos weeks apart never lock).
/// - At most ``Policy/maximumTrackedLogins`` logins' failures are remembered. A login whose last
///   failure is older than the lock period is forgotten first (oldest first, in constant amortised
///   time); one failed more recently never is, so made-up logins cannot flush a target's count.
///   When every remembered login failed that recently, a login not remembered may not try
///   (``hasRoom(for:now:)``) until one ages out.
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
        /// The most logins whose failures are remembered at once (only those whose last failure is
        /// older than ``lockMilliseconds`` are forgotten to make room).
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
    private var sessions: [String: Session] = [:]
    private var failures: [String: Failures] = [:]
    /// Every failure in the order recorded (login, time), read from `head`: the oldest entry whose
    /// time is still its login's `last` is the login that failed longest ago.
    private var failureOrder: [(login: String, at: Int64)] = []
    private var head = 0

    /// An empty table.
    package init(policy: Policy = Policy()) { self.policy = policy }

    /// Sessions open now (ended ones are removed as they are met, and by ``sweep(now:)``).
    package var count: Int { sessions.count }

    /// Until when `login` is locked (nil: it may try). A lock that has ended, and a count whose last
    /// failure is older than the lock period, are forgotten.
    package mutating func lockedUntil(_ login: String, now: Int64) -> Int64? {
        guard let f = failures[login] else { return nil }
        if let until = f.lockedUntil, until > now { return until }
        if f.lockedUntil != nil || isStale(f.last, now: now) { failures[login] = nil }
        return nil
    }

    /// Whether a failure of `login` can be remembered at `now`: it is remembered already, or there
    /// is room, or a login whose last failure is older than the lock period can be forgotten for
    /// it. False means too many logins failed within the lock period: refuse the sign-in unchecked.
    package mutating func hasRoom(for login: String, now: Int64) -> Bool {
        failures[login] != nil || makeRoom(now: now)
    }

    /// Records a failed sign-in of `login`; returns until when it is now locked, if this locked it.
    /// A login not remembered is not recorded when there is no room (``hasRoom(for:now:)``).
    package mutating func failed(_ login: String, now: Int64) -> Int64? {
        var f = failures[login] ?? Failures(count: 0, last: now, lockedUntil: nil)
        if failures[login] == nil, !makeRoom(now: now) { return nil }
        if isStale(f.last, now: now) { f = Failures(count: 0, last: now, lockedUntil: nil) }
        f.count += 1
        f.last = now
        if f.count >= policy.failuresBeforeLock { f.lockedUntil = now + policy.lockMilliseconds }
        failures[login] = f
        failureOrder.append((login, now))
        compactOrder()
        return f.lockedUntil
    }

    /// Whether a failure at `last` is old enough at `now` to be forgotten.
    private func isStale(_ last: Int64, now: Int64) -> Bool { now - last >= policy.lockMilliseconds }

    /// Forgets logins that failed longest ago, while they are stale, until one more fits; whether it does.
    private mutating func makeRoom(now: Int64) -> Bool {
        while failures.count >= policy.maximumTrackedLogins, head < failureOrder.count {
            let e = failureOrder[head]
            guard let f = failures[e.login], f.last == e.at else {
                head += 1  // a later failure of that login, or a forgotten one, superseded it
                continue
            }
            guard isStale(f.last, now: now) else { return false }
            failures[e.login] = nil
            head += 1
        }
        return failures.count < policy.maximumTrackedLogins
    }

    /// Drops the consumed and superseded entries of the order once they outnumber the live ones,
    /// so that its size stays within a few times the tracked logins (constant amortised time).
    private mutating func compactOrder() {
        guard failureOrder.count > 2 * max(failures.count, 1024) else { return }
        failureOrder = failureOrder[head...].filter { failures[$0.login]?.last == $0.at }
        head = 0
    }

    /// Opens a session `id` for `login` (a successful sign-in: the login's failures are cleared).
    package mutating func open(id: String, login: String, teams: [String], csrf: String, now: Int64) {
        failures[login] = nil
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
