import HTTPEndpoint
import Testing

/// The console's session table and lockout, driven by a table of times (no clock, no sleep).
@Suite struct ConsoleSessionTableTests {
    static let minute: Int64 = 60_000

    @Test func sessionEndsWhenIdleOrOldOrSignedOut() {
        var t = ConsoleSessionTable()
        t.open(id: "a", login: "nurse.kim", teams: ["ward-a"], csrf: "c", now: 0)
        let v1 = t.session("a", now: 29 * Self.minute); #expect(v1?.login == "nurse.kim")
        // Used at 29 min: idle from there.
        let v2 = t.session("a", now: 58 * Self.minute); #expect(v2 != nil)
        let v3 = t.session("a", now: 88 * Self.minute); #expect(v3 == nil)  // 30 min unused
        let v4 = t.session("a", now: 89 * Self.minute); #expect(v4 == nil)  // and stays ended
        #expect(t.count == 0)

        t.open(id: "b", login: "nurse.kim", teams: ["ward-a"], csrf: "c", now: 0)
        var now: Int64 = 0
        while now < 12 * 60 * Self.minute - 20 * Self.minute {
            now += 20 * Self.minute
            let v5 = t.session("b", now: now); #expect(v5 != nil)
        }
        let v6 = t.session("b", now: 12 * 60 * Self.minute); #expect(v6 == nil)  // absolute: 12 h whatever the use

        t.open(id: "c", login: "nurse.kim", teams: ["ward-a"], csrf: "c", now: 0)
        let v7 = t.close("c"); #expect(v7)
        let v8 = t.session("c", now: 1); #expect(v8 == nil)
        let v9 = t.close("c"); #expect(!v9)
        let v10 = t.session("unknown", now: 1); #expect(v10 == nil)
    }

    @Test func fiveFailuresLockForFifteenMinutes() {
        var t = ConsoleSessionTable()
        for k in 1...4 {
            let v11 = t.failed("nurse.kim", now: Int64(k)); #expect(v11 == nil)
            let v12 = t.lockedUntil("nurse.kim", now: Int64(k)); #expect(v12 == nil)
        }
        let v13 = t.failed("nurse.kim", now: 5); #expect(v13 == 5 + 15 * Self.minute)
        let v14 = t.lockedUntil("nurse.kim", now: 6); #expect(v14 == 5 + 15 * Self.minute)
        let v15 = t.lockedUntil("nurse.kim", now: 5 + 15 * Self.minute - 1); #expect(v15 != nil)
        let v16 = t.lockedUntil("physio.lee", now: 6); #expect(v16 == nil)  // per login
        let v17 = t.lockedUntil("nurse.kim", now: 5 + 15 * Self.minute); #expect(v17 == nil)  // the lock ends, and the count with it
        let v18 = t.failed("nurse.kim", now: 5 + 15 * Self.minute); #expect(v18 == nil)
    }

    @Test func madeUpLoginsNeverFlushOrBlockAStaffLogin() {
        var policy = ConsoleSessionTable.Policy()
        policy.maximumTrackedLogins = 3
        var t = ConsoleSessionTable(policy: policy, staff: ["nurse.kim", "physio.lee"])
        for k in 0..<4 { _ = t.failed("nurse.kim", now: Int64(k)) }
        // Far more made-up logins than the table remembers, all within the lock period.
        for k in 0..<1_000 { _ = t.failed("made.up\(k)", now: 4 + Int64(k)) }
        #expect(t.trackedOtherLogins == 3)
        let v1 = t.lockedUntil("nurse.kim", now: 2_000); #expect(v1 == nil)
        let v2 = t.failed("nurse.kim", now: 2_000); #expect(v2 == 2_000 + 15 * Self.minute)  // the fifth failure still locks
        // Another person never met "no room".
        for k in 0..<4 { let v = t.failed("physio.lee", now: 2_001 + Int64(k)); #expect(v == nil) }
        let v3 = t.failed("physio.lee", now: 2_005); #expect(v3 == 2_005 + 15 * Self.minute)
        let v4 = t.lockedUntil("nurse.kim", now: 2_000 + 15 * Self.minute - 1); #expect(v4 == 2_000 + 15 * Self.minute)
    }

    @Test func madeUpLoginsAreForgottenOldestFirst() {
        var policy = ConsoleSessionTable.Policy()
        policy.maximumTrackedLogins = 3
        var t = ConsoleSessionTable(policy: policy, staff: ["nurse.kim"])
        for k in 0..<4 { _ = t.failed("made.up1", now: Int64(k)) }  // four failures: one more locks
        _ = t.failed("made.up2", now: 10)
        _ = t.failed("made.up3", now: 11)
        _ = t.failed("made.up1", now: 12)  // the fifth failure: made.up1 is now the latest, and locked
        let locked = t.lockedUntil("made.up1", now: 13); #expect(locked == 12 + 15 * Self.minute)
        _ = t.failed("made.up4", now: 14)  // forgets made.up2, the one that failed longest ago
        #expect(t.trackedOtherLogins == 3)
        for k in 0..<4 { let v = t.failed("made.up2", now: 15 + Int64(k)); #expect(v == nil) }  // counted from one again
        // Now made.up3 (11) went first, then made.up1 (12): the lock, too, is forgotten under a flood.
        _ = t.failed("made.up5", now: 20)
        _ = t.failed("made.up6", now: 21)
        let v = t.lockedUntil("made.up1", now: 22); #expect(v == nil)
        #expect(t.trackedOtherLogins == 3)
    }

    @Test func manyLoginsOverTimeStayBounded() {
        var policy = ConsoleSessionTable.Policy()
        policy.maximumTrackedLogins = 8
        var t = ConsoleSessionTable(policy: policy)
        for k in 0..<50_000 {
            let login = "login\(k % 13)", now = Int64(k) * 2 * Self.minute
            _ = t.failed(login, now: now)
            guard t.trackedOtherLogins <= 8 else {
                Issue.record("\(t.trackedOtherLogins) logins tracked at \(k)")
                return
            }
        }
    }

    @Test func successClearsTheFailures() {
        var t = ConsoleSessionTable()
        for k in 1...4 { _ = t.failed("nurse.kim", now: Int64(k)) }
        t.open(id: "a", login: "nurse.kim", teams: ["ward-a"], csrf: "c", now: 10)
        for k in 1...4 { let v19 = t.failed("nurse.kim", now: 10 + Int64(k)); #expect(v19 == nil) }
    }

    @Test func theOldestUnusedSessionMakesRoom() {
        var policy = ConsoleSessionTable.Policy()
        policy.maximumSessions = 2
        var t = ConsoleSessionTable(policy: policy)
        t.open(id: "a", login: "x", teams: ["t"], csrf: "c", now: 0)
        t.open(id: "b", login: "x", teams: ["t"], csrf: "c", now: 1)
        _ = t.session("a", now: 2)
        t.open(id: "c", login: "x", teams: ["t"], csrf: "c", now: 3)
        #expect(t.count == 2)
        let v20 = t.session("b", now: 4); #expect(v20 == nil)
        let v21 = t.session("a", now: 4); #expect(v21 != nil)
    }
}
