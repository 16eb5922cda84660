import CSQLite
import CareReports
import Foundation
import MobilityModel
import PostgresStore
import StateStore
import TestSupport
import Testing

@testable import RuleEngine

/// What the daemon relies on of a state backend, run against each (``Backend``): the SQLite
/// store and PostgreSQL behave alike, and hold the same snapshots.
@Suite struct BackendConformanceTests {
    @Test(arguments: Backend.allCases)
    func commitLoadRoundTripsUserStateAndOutbox(_ backend: Backend) throws {
        let engine = try Engines.populated()
        let state = engine.state(of: "u")!
        let (store, reopen) = try backend.make()
        let ids = try store.commit(
            users: [
                .init(user: "u", appliedSeq: 42, eventNow: Timestamp(seconds: 99), eventClaims: [200_000, -5], state: engine.changes(of: "u")),
                .init(user: "ghost", appliedSeq: 7, eventNow: nil, state: nil)
            ],
            outbox: [.init(topic: "a", payload: [1, 2], retain: true), .init(topic: "b", payload: [], retain: false)], acknowledged: [], history: [])
        #expect(ids.count == 2 && ids[0] < ids[1])
        try store.acknowledge([ids[0]])
        let (users, outbox) = try reopen().load(alertNames: [], prepare: { $0 })
        #expect(outbox.map(\.topic) == ["b"] && outbox.map(\.id) == [ids[1]] && outbox[0].payload.isEmpty && !outbox[0].retain)
        let u = try #require(users.first { $0.user == "u" })
        #expect(u.appliedSeq == 42 && u.eventNow == Timestamp(seconds: 99) && u.eventClaims == [200_000, -5])
        let ghost = try #require(users.first { $0.user == "ghost" })
        #expect(ghost.eventClaims.isEmpty && ghost.state == nil && ghost.eventNow == nil && ghost.appliedSeq == 7)
        let snapshot = try #require(u.state)
        let r = snapshot.restored
        #expect(r.calendar.identifier == "Europe/Zurich" && r.hasProfile)
        #expect(r.openDays.map(\.day) == state.openDays.map(\.day) && r.openValueCount == 6)
        #expect(r.openDayValues == state.openDayValues && r.foldedDayList == state.foldedDayList)
        #expect(r.syncIndex == state.syncIndex && r.events.count == 2 && r.alerts == state.alerts)
        #expect(r.alertLog == state.alertLog && !state.alertLog.isEmpty)
        // The restored engine continues exactly as an uninterrupted one.
        var a = engine, b = Engine(program: engine.program)
        b.restore(snapshot)
        var outA: [EngineOutput] = [], outB: [EngineOutput] = []
        let later = Timestamp(seconds: Int64(20_510) * 86_400)
        a.advance(to: later, into: &outA)
        b.advance(to: later, into: &outB)
        #expect(outA == outB && !outA.isEmpty)
    }

    /// Commits of changes only, round after round (chunks rewritten from the first changed
    /// value, days shrunk by deletions, days folded away): both backends load the same snapshots,
    /// and the snapshot an uninterrupted engine holds.
    @Test func bothBackendsHoldTheSameSnapshotsAfterIncrementalCommits() throws {
        let sqlite = try Backend.sqlite.make(), postgres = try Backend.postgres.make()
        var engine = Engine(program: Engines.program)
        var out: [EngineOutput] = []
        // Ids whose byte order differs from Swift's string order (a decomposed "é").
        let users = ["e\u{301}-1", "f-2", "Z3", "ü4", "user-5"]
        for round in 0..<5 {
            for (i, u) in users.enumerated() {
                let day = Int64(20_500 + 5 * round)
                for k in 0..<(70 + 10 * i) {  // more than one chunk of 64 values
                    let t = Timestamp(seconds: day * 86_400 + 36_000 + Int64(k) * 60)
                    engine.ingest(
                        Engines.sample("\(u)-\(round)-\(k)", 0.5 + Double(k % 7) / 10, at: t, sync: k % 3 == 0 ? 1 : nil), user: u, now: t, into: &out)
                }
                if round > 0 {  // a day shrinks below its stored chunks
                    _ = engine.delete(ids: (0..<40).map { "\(u)-\(round - 1)-\($0)" }, user: u)
                }
            }
            // Days close, and those past the lateness window fold (from the third round on).
            engine.advance(to: Timestamp(seconds: Int64(20_501 + 5 * round) * 86_400 + 7200), into: &out)
            let records = users.map { StateStore.UserRecord(user: $0, appliedSeq: UInt64(round), eventNow: nil, state: engine.changes(of: $0)) }
            for s in [sqlite.store, postgres.store] { _ = try s.commit(users: records, outbox: [], acknowledged: [], history: []) }
            for u in users { engine.markPersisted(u) }
        }
        let a = try sqlite.reopen().load(alertNames: engine.alertNames, prepare: { $0 }).users.sorted { $0.user.utf8.lexicographicallyPrecedes($1.user.utf8) }
        let b = try postgres.reopen().load(alertNames: engine.alertNames, prepare: { $0 }).users
        #expect(b.map(\.user) == a.map(\.user) && a.count == users.count)  // PostgreSQL's order is bytes (COLLATE "C"), as SQLite's
        #expect(a.map(\.state) == b.map(\.state))
        for r in b {
            let loaded = try #require(r.state).restored, live = engine.state(of: r.user)!
            #expect(loaded.openDayValues == live.openDayValues && loaded.foldedDayList == live.foldedDayList, "\(r.user)")
            #expect(loaded.syncIndex == live.syncIndex && !loaded.foldedDayList.isEmpty, "\(r.user)")
        }
    }

    func day(_ s: String) -> DayNumber { CivilDate(parsing: Substring(s))!.dayNumber }

    func transition(_ id: String, _ status: AlertStatus, day d: String, headline: String, isRepeat: Bool = false) -> AlertTransition {
        AlertTransition(
            id: id, rule: "stalled_recovery", user: "jamie", severity: .warning, status: status, activeSince: Timestamp(seconds: 0),
            firedAt: Timestamp(seconds: 0), resolvedAt: status == .resolved ? Timestamp(seconds: 1) : nil,
            day: CivilDate(parsing: Substring(d))!, headline: headline, labels: [("team", "physio")], evidence: [], annotations: [],
            isRepeat: isRepeat, reason: nil)
    }

    @Test(arguments: Backend.allCases)
    func historyRevisesDaysFoldsEpisodesAndPrunes(_ backend: Backend) throws {
        let (store, _) = try backend.make()
        let p1 = SeriesPoint(user: "jamie", name: "speed_p95", day: CivilDate(parsing: "2026-03-02")!, value: 1.2, unit: "m/s")
        let missing = SeriesPoint(user: "jamie", name: "speed_p95", day: CivilDate(parsing: "2026-03-03")!, value: nil, unit: "m/s")
        let injury = TimelineEvent(id: "inj", category: .clinical, kind: "injury", firstDay: day("2026-02-01"), lastDay: day("2026-02-01"))
        let firing = transition("a1", .firing, day: "2026-03-02", headline: "first")
        _ = try store.commit(
            users: [], outbox: [], acknowledged: [],
            history: [.series(p1), .series(missing), .timeline(user: "jamie", injury), .alert(firing)])
        var revised = p1
        revised.value = 1.1
        revised.revised = true
        let moved = TimelineEvent(id: "inj", category: .clinical, kind: "injury", firstDay: day("2026-02-03"), lastDay: day("2026-02-03"), note: "<&>")
        let movedAgain = TimelineEvent(id: "inj", category: .clinical, kind: "injury", firstDay: day("2026-02-04"), lastDay: day("2026-02-04"))
        _ = try store.commit(
            users: [], outbox: [], acknowledged: [],
            history: [
                .series(revised), .timeline(user: "jamie", moved), .timeline(user: "jamie", movedAgain),  // twice in one commit: the last wins
                .alert(transition("a1", .firing, day: "2026-03-09", headline: "reminder", isRepeat: true)),
                .alert(transition("a1", .resolved, day: "2026-03-12", headline: "resolved")),
                .alert(transition("a2", .firing, day: "2026-03-20", headline: "again"))
            ])
        let h = try store.history(of: "jamie", from: .min, through: .max)
        #expect(h.series["speed_p95"]?[day("2026-03-02")] == .some(1.1))
        #expect(h.series["speed_p95"]?[day("2026-03-03")] == .some(nil))  // missing stays missing, not zero
        #expect(h.series["speed_p95"]?.count == 2 && h.units["speed_p95"] == "m/s")
        #expect(h.timeline == [movedAgain])
        #expect(h.alerts.map(\.id) == ["a1", "a2"])
        #expect(h.alerts[0].firedDay == day("2026-03-02") && h.alerts[0].endedDay == day("2026-03-12") && h.alerts[0].headline == "resolved")
        let late = try store.history(of: "jamie", from: day("2026-03-13"), through: .max)
        #expect(late.alerts.map(\.id) == ["a2"] && late.series["speed_p95"] == nil)
        #expect(try store.history(of: "nobody", from: .min, through: .max) == UserHistory(user: "nobody"))
        #expect(try store.firingPayload(user: "jamie", alert: "a1").map { AlertTransition.parse($0)?.headline } == "reminder")
        #expect(try store.firingPayload(user: "jamie", alert: "a9") == nil)

        // Weekly reports: markers due until built, by week, pruned by day.
        for (w, monday) in [("2026-W09", "2026-02-23"), ("2026-W10", "2026-03-02")] {
            _ = try store.commit(
                users: [], outbox: [], acknowledged: [],
                history: [HistoryRecord(user: "jamie", kind: .weekly, key: w, day: day(monday), payload: Array("{\"week\":\"\(w)\"}".utf8))])
        }
        _ = try store.commit(
            users: [], outbox: [], acknowledged: [], history: [HistoryRecord(user: "kim", kind: .weekly, key: "2026-W10", day: day("2026-03-02"))])
        #expect(try store.dueReports().map { "\($0.user) \($0.week)" } == ["kim 2026-W10"])
        #expect(try store.weeklyReport(of: "jamie", week: nil)?.week == "2026-W10")
        #expect(try store.weeklyReport(of: "jamie", week: "2026-W09").map { String(decoding: $0.payload, as: UTF8.self) } == "{\"week\":\"2026-W09\"}")
        #expect(try store.weeklyReport(of: "jamie", week: "2026-W11") == nil && store.weeklyReport(of: "kim", week: nil) == nil)
        #expect(try store.reportWeeks(of: "jamie") == ["2026-W10", "2026-W09"])
        #expect(try store.pruneHistory([(user: "jamie", keepFrom: day("2026-03-03"), reportsFrom: day("2026-03-01"))]) > 0)
        #expect(try store.reportWeeks(of: "jamie") == ["2026-W10"])
        #expect(try store.history(of: "jamie", from: .min, through: .max).series["speed_p95"]?.keys.sorted() == [day("2026-03-03")])
    }

    @Test(arguments: Backend.allCases)
    func reportsCommitWithTheirOutputsAndPruneTheUsersHistory(_ backend: Backend) throws {
        let (store, _) = try backend.make()
        let old = SeriesPoint(user: "jamie", name: "speed_p95", day: CivilDate(parsing: "2026-02-20")!, value: 1.0, unit: "m/s")
        let kept = SeriesPoint(user: "jamie", name: "speed_p95", day: CivilDate(parsing: "2026-03-08")!, value: 1.2, unit: "m/s")
        _ = try store.commit(
            users: [], outbox: [], acknowledged: [],
            history: [
                .series(old), .series(kept), HistoryRecord(user: "jamie", kind: .weekly, key: "2025-W01", day: day("2025-01-01"), payload: [1]),
                HistoryRecord(user: "jamie", kind: .weekly, key: "2026-W10", day: day("2026-03-02"))
            ])
        #expect(try store.dueReports().map(\.week) == ["2026-W10"])
        let payload = Array("{\"week\":\"2026-W10\"}".utf8)
        let ids = try store.commitReports(
            outbox: [.init(topic: "r/jamie", payload: payload, retain: true), .init(topic: "t/jamie", payload: payload, retain: false)],
            history: [HistoryRecord(user: "jamie", kind: .weekly, key: "2026-W10", day: day("2026-03-02"), payload: payload)],
            prune: [(user: "jamie", keepFrom: day("2026-03-01"), reportsFrom: day("2026-01-01"))])
        #expect(ids.count == 2 && ids[0] < ids[1])
        #expect(try store.dueReports().isEmpty)
        #expect(try store.weeklyReport(of: "jamie", week: nil).map { $0.week } == "2026-W10")
        #expect(try store.reportWeeks(of: "jamie") == ["2026-W10"])  // 2025-W01 pruned
        #expect(try store.history(of: "jamie", from: .min, through: .max).series["speed_p95"]?.keys.sorted() == [day("2026-03-08")])
        let (_, outbox) = try store.load(alertNames: [], prepare: { $0 })
        #expect(outbox.map(\.id) == ids && outbox.map(\.topic) == ["r/jamie", "t/jamie"] && outbox.allSatisfy { $0.payload == payload })
    }

    /// A prune that fails never leaves committed reports due (the shard would build and publish
    /// them again): SQLite rolls the reports back with it, PostgreSQL keeps them and the rows the
    /// prune would have deleted, for the user's next report to prune.
    @Test(arguments: Backend.allCases)
    func aFailingPruneNeverLeavesCommittedReportsDue(_ backend: Backend) throws {
        let store: any StateBackend
        switch backend {
        case .sqlite:
            let dir = TemporaryPath.make("mw-conf")
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            store = try StateStore(path: dir + "/state.sqlite")
            var db: OpaquePointer?
            try #require(sqlite3_open(dir + "/state.sqlite", &db) == SQLITE_OK)
            defer { sqlite3_close(db) }
            try #require(
                sqlite3_exec(db, "CREATE TRIGGER no_prune BEFORE DELETE ON history_days BEGIN SELECT RAISE(ABORT, 'no prune'); END", nil, nil, nil) == SQLITE_OK
            )
        case .postgres:
            let url = try PostgresServer.shared().createDatabase()
            store = try PostgresStore(url: url, owner: "first")
            _ = try PostgresServer.shared().psql(
                "CREATE FUNCTION no_prune() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no prune'; END $$; "
                    + "CREATE TRIGGER no_prune BEFORE DELETE ON history_points FOR EACH ROW EXECUTE FUNCTION no_prune()",
                database: String(url.split(separator: "/").last!.split(separator: "?").first!))
        }
        let old = SeriesPoint(user: "jamie", name: "speed_p95", day: CivilDate(parsing: "2026-02-20")!, value: 1.0, unit: "m/s")
        _ = try store.commit(
            users: [], outbox: [], acknowledged: [],
            history: [.series(old), HistoryRecord(user: "jamie", kind: .weekly, key: "2026-W10", day: day("2026-03-02"))])
        let payload = Array("{\"week\":\"2026-W10\"}".utf8)
        let commit = {
            try store.commitReports(
                outbox: [.init(topic: "r/jamie", payload: payload, retain: true)],
                history: [HistoryRecord(user: "jamie", kind: .weekly, key: "2026-W10", day: day("2026-03-02"), payload: payload)],
                prune: [(user: "jamie", keepFrom: day("2026-03-01"), reportsFrom: day("2026-01-01"))])
        }
        let (_, before) = try store.load(alertNames: [], prepare: { $0 })
        #expect(before.isEmpty)
        switch backend {
        case .sqlite:
            #expect(throws: (any Error).self) { _ = try commit() }
            #expect(try store.dueReports().map(\.week) == ["2026-W10"])
            #expect(try store.load(alertNames: [], prepare: { $0 }).outbox.isEmpty)
        case .postgres:
            let ids = try commit()
            let due = try store.dueReports()
            #expect(ids.count == 1 && due.isEmpty)
            #expect(try store.load(alertNames: [], prepare: { $0 }).outbox.map(\.id) == ids)
        }
        // Either way the series row the prune would have deleted is still there.
        #expect(try store.history(of: "jamie", from: .min, through: .max).series["speed_p95"]?.keys.sorted() == [day("2026-02-20")])
    }

    @Test(arguments: Backend.allCases)
    func anUnreadableHistoryRowIsAnErrorNotAGuess(_ backend: Backend) throws {
        let (store, _) = try backend.make()
        _ = try store.commit(
            users: [], outbox: [], acknowledged: [],
            history: [HistoryRecord(user: "jamie", kind: .timeline, key: "x", day: 1, payload: Array("{\"id\":1}".utf8))])
        #expect(throws: HistoryDecodingError.self) { try store.history(of: "jamie", from: .min, through: .max) }
    }

    @Test(arguments: Backend.allCases)
    func deadLettersMetaAndOutboxAcknowledgements(_ backend: Backend) throws {
        let (store, reopen) = try backend.make()
        let ids = try store.commit(
            users: [], outbox: (0..<4).map { .init(topic: "t/\($0)", payload: Array("p\($0)".utf8), retain: $0 == 0) }, acknowledged: [], history: [])
        #expect(try store.park([(ids[1], "acl denied"), (ids[2], "too large")], at: 1234) == 2)
        #expect(try store.park([(ids[1], "again")], at: 99) == 2)  // gone from the outbox: nothing more parked
        #expect(
            try store.deadLetters() == [
                .init(id: ids[1], topic: "t/1", reason: "acl denied", at: 1234), .init(id: ids[2], topic: "t/2", reason: "too large", at: 1234)
            ])
        _ = try store.commit(users: [], outbox: [], acknowledged: [ids[3]], history: [])
        #expect(try store.meta("rules_identity") == nil)
        try store.setMeta("rules_identity", "abc")
        try store.setMeta("rules_identity", "déf")
        let again = try reopen()
        #expect(try again.load(alertNames: [], prepare: { $0 }).outbox.map(\.topic) == ["t/0"])
        #expect(try again.meta("rules_identity") == "déf" && again.deadLetters().count == 2)
    }

    @Test(arguments: Backend.allCases)
    func acknowledgementsAreRecordedOnceWithTheirAuditRowAndOutputs(_ backend: Backend) throws {
        let (store, reopen) = try backend.make()
        let ack = StoredAcknowledgement(
            alert: "al-1", user: "jamie", rule: "slow", team: "physio",
            acknowledgement: AlertAcknowledgement(by: "dr-a", at: Timestamp(seconds: 5), note: "seen"),
            payload: Array("{}".utf8))
        let audit = AuditEntry(
            at: Timestamp(seconds: 5), action: "acknowledge", actor: "dr-a", team: "physio", user: "jamie", rule: "slow", subject: "al-1", note: "seen")
        let r = try store.recordAcknowledgement(ack, audit: audit) { e in
            [.init(topic: "alerts/al-1", payload: [1], retain: true), .init(topic: "audit", payload: Array(e.json.utf8), retain: false)]
        }
        #expect(r.seq >= 1 && r.outbox.count == 2 && r.outbox[0].id > 0 && r.outbox[1].id > r.outbox[0].id)
        // Already acknowledged: refused, and nothing of the second attempt is written.
        #expect(throws: (any Error).self) { _ = try store.recordAcknowledgement(ack, audit: audit) { _ in [.init(topic: "x", payload: [], retain: false)] } }
        let again = try reopen()
        #expect(try again.alertAcknowledgements() == [ack])
        #expect(try again.auditTrail(limit: 10).map(\.subject) == ["al-1"] && again.auditTrail(limit: 10)[0].seq == r.seq)
        #expect(try again.load(alertNames: [], prepare: { $0 }).outbox.map(\.topic) == ["alerts/al-1", "audit"])
        try again.clearAcknowledgements(["al-1"])
        #expect(try again.alertAcknowledgements().isEmpty && again.auditTrail(limit: 10).count == 1)
    }

    /// A patient's acknowledgements are read by user, however many rows other patients added since.
    @Test(arguments: Backend.allCases)
    func aUsersAuditRowsAreReadByUserAndAction(_ backend: Backend) throws {
        let (store, reopen) = try backend.make()
        func acknowledge(_ alert: String, user: String, at seconds: Int64) throws {
            let by = AlertAcknowledgement(by: "dr-a", at: Timestamp(seconds: seconds), note: nil)
            let ack = StoredAcknowledgement(alert: alert, user: user, rule: "slow", team: "physio", acknowledgement: by, payload: [])
            let audit = AuditEntry(
                at: Timestamp(seconds: seconds), action: "acknowledge", actor: "dr-a", team: "physio", user: user, rule: "slow", subject: alert, note: nil)
            _ = try store.recordAcknowledgement(ack, audit: audit) { _ in [] }
        }
        try acknowledge("al-1", user: "jamie", at: 1)
        try acknowledge("al-2", user: "jamie", at: 2)
        for k in 0..<30 { try acknowledge("other-\(k)", user: "alex", at: 10 + Int64(k)) }
        let again = try reopen()
        #expect(try !again.auditTrail(limit: 20).contains { $0.user == "jamie" })
        #expect(try again.auditTrail(of: "jamie", action: "acknowledge", limit: 10).map(\.subject) == ["al-1", "al-2"])
        #expect(try again.auditTrail(of: "jamie", action: "acknowledge", limit: 1).map(\.subject) == ["al-2"])  // the latest
        #expect(try again.auditTrail(of: "jamie", action: "silence", limit: 10).isEmpty)
        #expect(try again.auditTrail(of: "alex", action: "acknowledge", limit: 100).count == 30)
    }

    @Test(arguments: Backend.allCases)
    func silencesAreStoredOnceWithTheirAuditDetailAndExpire(_ backend: Backend) throws {
        let (store, reopen) = try backend.make()
        let silence = Silence(
            id: "0123456789abcdef", team: "physio", matchers: [try SilenceMatcher(name: "user", value: "jamie")],
            startsAt: Timestamp(seconds: 10), endsAt: Timestamp(seconds: 3_610), createdBy: "dr-a", comment: "in hospital")
        let added = AuditEntry(
            at: Timestamp(seconds: 10), action: "silence", actor: "dr-a", team: "physio", user: "", rule: "", subject: silence.id,
            note: "in hospital", detail: "user=\"jamie\"")
        let items = try store.recordSilence(silence, audit: added) { e in [.init(topic: "silences/\(silence.id)", payload: Array(e.json.utf8), retain: true)] }
        #expect(items.count == 1 && items[0].id > 0)
        #expect(throws: (any Error).self) { _ = try store.recordSilence(silence, audit: added) { _ in [] } }  // the id exists
        let again = try reopen()
        let stored = try again.silences()
        #expect(stored.silences.map(\.id) == [silence.id] && stored.unreadable.isEmpty)
        #expect(stored.silences.first?.matches(user: "jamie", rule: "slow", severity: .warning, labels: []) == true)
        #expect(try again.auditTrail(limit: 10).map(\.detail) == ["user=\"jamie\""])
        let expired = AuditEntry(
            at: Timestamp(seconds: 20), action: "expire", actor: "dr-a", team: "physio", user: "", rule: "", subject: silence.id, note: nil)
        _ = try again.expireSilence(id: silence.id, audit: expired) { _ in [.init(topic: "silences/\(silence.id)", payload: [], retain: true)] }
        #expect(try again.silences().silences.isEmpty)
        #expect(try again.auditTrail(limit: 10).map(\.action) == ["silence", "expire"])
    }

    /// A care-staff timeline change: the user's state, the entry's history row (with who entered
    /// it), its numbered audit row and the announcing outputs commit together; a retraction
    /// removes the row; both backends read back the same.
    @Test(arguments: Backend.allCases)
    func aStaffTimelineChangeCommitsWithItsAuditRow(_ backend: Backend) throws {
        let engine = try Engines.populated()
        let (store, reopen) = try backend.make()
        let at = Timestamp(seconds: 1_772_000_000)
        let injury = TimelineEvent(
            id: "inj-1", category: .clinical, kind: "injury", firstDay: 20_480, lastDay: 20_480, note: "fell",
            entered: EntryAttribution(by: "nurse.kim", team: "ward-a", at: at))
        let illness = TimelineEvent(id: "ill", category: .annotation, kind: "illness", firstDay: 20_481, lastDay: 20_483)
        func change(_ action: String, _ subject: String) -> AuditedChange {
            AuditedChange(entry: AuditEntry(at: at, action: action, actor: "nurse.kim", team: "ward-a", user: "u", rule: "", subject: subject, note: nil)) {
                e in
                [
                    .init(topic: "audit", payload: Array(e.json.utf8), retain: false),
                    .init(topic: "teams/ward-a/audit", payload: Array(e.json.utf8), retain: false)
                ]
            }
        }
        let (ids, announced) = try store.commit(
            users: [.init(user: "u", appliedSeq: 3, eventNow: nil, state: engine.changes(of: "u"))],
            outbox: [.init(topic: "before", payload: [1], retain: false)],
            acknowledged: [], history: [.timeline(user: "u", injury), .timeline(user: "u", illness)], audited: [change("add_event", "inj-1")])
        #expect(ids.count == 1)
        #expect(announced.map(\.topic) == ["audit", "teams/ward-a/audit"] && announced.allSatisfy { $0.id > ids[0] })
        #expect(announced.allSatisfy { String(decoding: $0.payload, as: UTF8.self).contains("\"seq\":1,") }, "the announcement carries the row's number")
        #expect(try store.auditTrail(limit: 10).map { "\($0.seq) \($0.action) \($0.actor) \($0.subject)" } == ["1 add_event nurse.kim inj-1"])
        #expect(try store.history(of: "u", from: .min, through: .max).timeline == [injury, illness])

        let again = try reopen()
        let (_, second) = try again.commit(
            users: [], outbox: [], acknowledged: [], history: [.retracted(user: "u", id: "inj-1")], audited: [change("retract_event", "inj-1")])
        #expect(second.count == 2)
        #expect(try again.history(of: "u", from: .min, through: .max).timeline == [illness])
        #expect(try again.auditTrail(limit: 10).map(\.action) == ["add_event", "retract_event"])
        let (users, outbox) = try again.load(alertNames: [], prepare: { $0 })
        #expect(users.first { $0.user == "u" }?.appliedSeq == 3)
        #expect(outbox.map(\.topic) == ["before", "audit", "teams/ward-a/audit", "audit", "teams/ward-a/audit"])
    }
}
