import HTTPEndpoint
import Synchronization
import Testing

/// `ConsoleSessions` with a given clock and a staff file made by the real `mosquitto_passwd`.
@Suite struct ConsoleSessionsTests {
    static let minute: Int64 = 60_000

    @Test func aFloodOfMadeUpLoginsLocksOutNoOne() throws {
        let kim = try StaffPasswordsTests.mosquittoLine("nurse.kim", "correct horse")
        let lee = try StaffPasswordsTests.mosquittoLine("physio.lee", "battery staple")
        let clock = Mutex<Int64>(1_000_000)
        let sessions = ConsoleSessions(passwords: try StaffPasswords(parsing: "\(kim) teams=ward-a\n\(lee) teams=ward-a\n")) {
            clock.withLock { $0 }
        }
        // 10 000 made-up logins fail within 10 minutes (the default table remembers 10 000).
        for k in 0..<10_000 {
            clock.withLock { $0 += 60 }
            let r = sessions.signIn(login: "made.up\(k)", password: Array("guess".utf8))
            guard case .refused = r else {
                Issue.record("made.up\(k): \(r)")
                return
            }
        }
        // The ward still signs in.
        guard case .signedIn(_, let s) = sessions.signIn(login: "nurse.kim", password: Array("correct horse".utf8)) else {
            Issue.record("nurse.kim could not sign in after the flood")
            return
        }
        #expect(s.login == "nurse.kim" && s.teams == ["ward-a"])
        // A person's lockout still works: five wrong passwords lock for 15 minutes.
        for k in 1...4 {
            let r = sessions.signIn(login: "physio.lee", password: Array("wrong \(k)".utf8))
            #expect(r == .refused(lockedUntil: nil))
        }
        let t = clock.withLock { $0 }
        #expect(sessions.signIn(login: "physio.lee", password: Array("wrong 5".utf8)) == .refused(lockedUntil: t + 15 * Self.minute))
        #expect(sessions.signIn(login: "physio.lee", password: Array("battery staple".utf8)) == .locked(until: t + 15 * Self.minute))
        // A new made-up login is checked and refused, not turned away unchecked.
        #expect(sessions.signIn(login: "made.up.more", password: Array("guess".utf8)) == .refused(lockedUntil: nil))
        clock.withLock { $0 += 15 * Self.minute }
        if case .signedIn = sessions.signIn(login: "physio.lee", password: Array("battery staple".utf8)) {
        } else {
            Issue.record("physio.lee still locked after 15 minutes")
        }
    }
}

extension ConsoleSessionsTests {
    @Test func signInsAreCountedNeverNamed() throws {
        let kim = try StaffPasswordsTests.mosquittoLine("nurse.kim", "correct horse")
        let clock = Mutex<Int64>(1_000_000)
        let sessions = ConsoleSessions(passwords: try StaffPasswords(parsing: "\(kim) teams=ward-a\n")) { clock.withLock { $0 } }
        #expect(sessions.counts == ConsoleSessions.Counts())
        _ = sessions.signIn(login: "nurse.kim", password: Array("correct horse".utf8))
        for k in 1...5 { _ = sessions.signIn(login: "nurse.kim", password: Array("wrong \(k)".utf8)) }
        _ = sessions.signIn(login: "nurse.kim", password: Array("correct horse".utf8))  // locked
        _ = sessions.signIn(login: "made.up", password: Array("guess".utf8))
        var expected = ConsoleSessions.Counts()
        (expected.signedIn, expected.refused, expected.locked, expected.lockouts, expected.sessions) = (1, 6, 1, 1, 1)
        #expect(sessions.counts == expected)
        clock.withLock { $0 += 30 * Self.minute }  // the session is unused for 30 minutes
        #expect(sessions.counts.sessions == 0)
    }
}
