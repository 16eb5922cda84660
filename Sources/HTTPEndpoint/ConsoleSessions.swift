import CCrypto
import Synchronization

/// The console's sign-in and sessions: the staff's passwords (``StaffPasswords``), the session
/// table (``ConsoleSessionTable``) under a lock, the wall clock, and random session ids and CSRF
/// tokens (256 bits each, from OpenSSL's generator).
///
/// A session id travels only in the ``cookieName`` cookie, `Secure; HttpOnly; SameSite=Strict;
/// Path=/` (browsers take a `Secure` cookie over plain HTTP on a loopback address only, so off
/// loopback the listener's TLS is what carries it). ``HTTPRouter`` finds the session of a request
/// to a `.session` route and checks the CSRF token of every form it posts.
package final class ConsoleSessions: Sendable {
    /// What a sign-in came to.
    package enum SignIn: Sendable, Equatable {
        /// Signed in: the new session's id (for the cookie) and the session.
        case signedIn(id: String, ConsoleSessionTable.Session)
        /// The login or password is wrong (which, is not said); `lockedUntil` when this failure locked the login.
        case refused(lockedUntil: Int64?)
        /// The login is locked until then; the password was not checked.
        case locked(until: Int64)
    }

    /// How sign-ins went since the start: counts only, never a login (for the metrics).
    package struct Counts: Sendable, Equatable {
        /// Sign-ins that opened a session.
        package var signedIn = 0
        /// Sign-ins refused for a wrong login or password.
        package var refused = 0
        /// Sign-ins refused unchecked because the login was locked.
        package var locked = 0
        /// Logins locked after repeated failures.
        package var lockouts = 0
        /// Sessions open now.
        package var sessions = 0
        /// All zero.
        package init() {}
    }

    /// The cookie that carries the session id: `__Host-`, so a browser takes it only `Secure`, for
    /// `Path=/` and without `Domain` (no sibling host can set or shadow it).
    package static let cookieName = "__Host-mw_console"

    private let passwords: StaffPasswords
    private let table: Mutex<ConsoleSessionTable>
    private let now: @Sendable () -> Int64
    private let tally = Mutex(Counts())

    /// Sessions for the people of `passwords`, timed by `now` (milliseconds since the epoch).
    package init(passwords: StaffPasswords, policy: ConsoleSessionTable.Policy = .init(), now: @escaping @Sendable () -> Int64) {
        self.passwords = passwords
        self.table = Mutex(ConsoleSessionTable(policy: policy, staff: Set(passwords.logins)))
        self.now = now
    }

    /// The limits in force.
    package var policy: ConsoleSessionTable.Policy { table.withLock { $0.policy } }

    /// Checks a sign-in (the password is checked outside the lock; a locked login's is not checked).
    /// A success ends the session `cookieHeader` names, if any: one browser holds one session, so
    /// signing in as someone else on a shared ward computer leaves nothing of the previous person.
    package func signIn(login: String, password: [UInt8], replacing cookieHeader: String? = nil) -> SignIn {
        let t = now()
        if let until = table.withLock({ $0.lockedUntil(login, now: t) }) {
            tally.withLock { $0.locked += 1 }
            return .locked(until: until)
        }
        guard let teams = passwords.verify(login: login, password: password) else {
            let lockedUntil = table.withLock { $0.failed(login, now: t) }
            tally.withLock {
                $0.refused += 1
                if lockedUntil != nil { $0.lockouts += 1 }
            }
            return .refused(lockedUntil: lockedUntil)
        }
        tally.withLock { $0.signedIn += 1 }
        let id = Self.randomHex(), csrf = Self.randomHex()
        let old = Self.cookie(Self.cookieName, in: cookieHeader)
        return table.withLock { table in
            if let old { table.close(old) }
            table.open(id: id, login: login, teams: teams, csrf: csrf, now: t)
            return .signedIn(id: id, table.session(id, now: t)!)
        }
    }

    /// How sign-ins went since the start, and the sessions open now (ended ones are swept first).
    package var counts: Counts {
        let t = now()
        var c = tally.withLock { $0 }
        c.sessions = table.withLock { table in
            table.sweep(now: t)
            return table.count
        }
        return c
    }

    /// The live session named by a request's `Cookie` header, with its id.
    package func session(cookieHeader: String?) -> (id: String, session: ConsoleSessionTable.Session)? {
        guard let id = Self.cookie(Self.cookieName, in: cookieHeader), id.utf8.count == 64 else { return nil }
        let t = now()
        return table.withLock { $0.session(id, now: t) }.map { (id, $0) }
    }

    /// Ends a session (sign-out).
    package func signOut(id: String) { _ = table.withLock { $0.close(id) } }

    /// The `Set-Cookie` value that gives the browser a session id.
    package func setCookie(id: String) -> String {
        "\(Self.cookieName)=\(id); Secure; HttpOnly; SameSite=Strict; Path=/; Max-Age=\(policy.absoluteMilliseconds / 1000)"
    }

    /// The `Set-Cookie` value that makes the browser forget the session id.
    package static let clearCookie = "\(cookieName)=; Secure; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"

    /// The value of cookie `name` in a `Cookie` header (`a=1; b=2`), nil when absent.
    package static func cookie(_ name: String, in header: String?) -> String? {
        guard let header else { return nil }
        for pair in header.split(separator: ";") {
            let p = pair.drop { $0 == " " }
            guard let eq = p.firstIndex(of: "="), p[..<eq] == name else { continue }
            return String(p[p.index(after: eq)...])
        }
        return nil
    }

    /// Whether two tokens are equal, in time that depends only on their lengths.
    package static func sameToken(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count, !x.isEmpty else { return false }
        return CRYPTO_memcmp(x, y, x.count) == 0
    }

    /// 32 random bytes as 64 lower-case hex digits; stops the process if the generator fails
    /// (a session id must never be guessable).
    static func randomHex() -> String {
        var bytes = [UInt8](repeating: 0, count: 32)
        precondition(RAND_bytes(&bytes, 32) == 1, "OpenSSL's random generator failed")
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
