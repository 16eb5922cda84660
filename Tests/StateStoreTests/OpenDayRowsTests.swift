import CSQLite
import Foundation
import MobilityModel
import RuleLanguage
import TestSupport
import Testing

@testable import RuleEngine
@testable import StateStore

/// Schema 2 keeps each open day in a row of its own: a commit writes the days that changed and
/// deletes the rows of days folded since, and a schema-1 store is migrated without loss.
@Suite struct OpenDayRowsTests {
    func tempPath() -> String {
        let d = TemporaryPath.make("mw-rows")
        try? FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d + "/s.sqlite"
    }

    /// An engine for `rules` and a fresh store in a temporary directory.
    func fixture(_ rules: String) throws -> (Engine, StateStore, String) {
        let p = try #require(Checker.check(text: rules).program)
        let path = tempPath()
        return (Engine(program: p), try StateStore(path: path), path)
    }

    func remove(_ path: String) { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }

    /// The distinct days with rows, or with `chunksOf`, the chunk numbers of that day.
    func rows(_ path: String, chunksOf day: Int64? = nil) throws -> [Int64] {
        var db: OpaquePointer?, st: OpaquePointer?
        try #require(sqlite3_open(path, &db) == SQLITE_OK)
        defer { sqlite3_finalize(st); sqlite3_close(db) }
        let sql =
            day.map { "SELECT chunk FROM user_days WHERE user = 'u' AND day = \($0) ORDER BY chunk" }
            ?? "SELECT DISTINCT day FROM user_days WHERE user = 'u' ORDER BY day"
        try #require(sqlite3_prepare_v2(db, sql, -1, &st, nil) == SQLITE_OK)
        var out: [Int64] = []
        while sqlite3_step(st) == SQLITE_ROW { out.append(sqlite3_column_int64(st, 0)) }
        return out
    }

    func commit(_ e: inout Engine, _ store: StateStore) throws {
        let changes = try #require(e.changes(of: "u"))
        _ = try store.commit(users: [.init(user: "u", appliedSeq: 1, eventNow: nil, state: changes)], outbox: [])
        e.markPersisted("u")
    }

    @Test func commitsChangedDaysAndDropsFoldedRows() throws {
        var (e, store, path) = try fixture("series s = p95(walkingSpeed)\nalert slow { when mean(s, 3 d) < 1 m/s\n for 1 d }")
        defer { remove(path) }
        var out: [EngineOutput] = []
        func day(_ d: Int, samples: Int = 2, tag: String = "s") {
            let t = LocalCalendar.utc.startOfDay(DayNumber(20_500 + d)).adding(seconds: 36_000)
            for j in 0..<samples {
                e.ingest(Sample(id: "\(tag)\(d)-\(j)", metric: .walkingSpeed, value: 0.9 + Double(j) / 10, start: t, end: t), user: "u", now: t, into: &out)
            }
            e.advance(user: "u", to: t, into: &out)
        }
        for d in 0..<12 { day(d) }
        try commit(&e, store)
        let st = try #require(e.state(of: "u"))
        #expect(!st.foldedRuns.isEmpty)
        #expect(try rows(path) == st.openDays.map { Int64($0.day) })
        // One more sample on the current day: one dirty day, the others untouched.
        day(11, samples: 1, tag: "late")
        #expect(e.state(of: "u")!.openDays.filter(\.dirty).map(\.day) == [20_511])
        // Ten more days: the folded days' rows are deleted, the rest reload exactly.
        for d in 12..<22 { day(d) }
        try commit(&e, store)
        let now = try #require(e.state(of: "u"))
        #expect(try rows(path) == now.openDays.map { Int64($0.day) })
        let loaded = try #require(try StateStore(path: path).load().users.first?.state?.restored)
        #expect(loaded.openDays.map(\.day) == now.openDays.map(\.day))
        #expect(loaded.openDayValues == now.openDayValues)
        #expect(loaded.openDays.allSatisfy { !$0.dirty })
        #expect(loaded.foldedDayList == now.foldedDayList)
    }

    @Test func largeDaysAreWrittenInChunksFromTheFirstChange() throws {
        var (e, store, path) = try fixture("series n = count(walkingSpeed)")
        defer { remove(path) }
        var out: [EngineOutput] = []
        let t0 = LocalCalendar.utc.startOfDay(20_500).adding(seconds: 3600)
        func add(_ ids: Range<Int>) {
            for i in ids {
                let t = t0.adding(seconds: Int64(i))
                e.ingest(Sample(id: "a\(i)", metric: .walkingSpeed, value: 1 + Double(i) / 1000, start: t, end: t), user: "u", now: t, into: &out)
            }
        }
        func reloaded() throws -> [StoredValue] { try #require(try StateStore(path: path).load().users.first?.state?.restored.openDayValues.first) }
        add(0..<150)
        try commit(&e, store)
        #expect(try rows(path, chunksOf: 20_500) == [0, 1, 2])
        #expect(try reloaded() == e.state(of: "u")!.openDayValues[0])
        // One more value dirties only the last chunk.
        add(150..<151)
        #expect(e.state(of: "u")!.openDays[0].dirtyFrom == 150)
        try commit(&e, store)
        #expect(try reloaded() == e.state(of: "u")!.openDayValues[0])
        // Deleting the first 100 values rewrites from chunk 0 and drops the chunk no longer needed.
        #expect(e.delete(ids: (0..<100).map { "a\($0)" }, user: "u") == 100)
        #expect(e.state(of: "u")!.openDays[0].dirtyFrom == 0)
        try commit(&e, store)
        #expect(try rows(path, chunksOf: 20_500) == [0])
        #expect(try reloaded() == e.state(of: "u")!.openDayValues[0] && e.state(of: "u")!.openDayValues[0].count == 51)
    }

    @Test func migratesASchemaOneStore() throws {
        let path = tempPath()
        defer { remove(path) }
        // A store as the first release left it: schema 1, the whole state in one v1 blob.
        var db: OpaquePointer?
        try #require(sqlite3_open(path, &db) == SQLITE_OK)
        #expect(sqlite3_exec(db, "PRAGMA journal_mode=WAL; " + StateStore.migrations[0] + " PRAGMA user_version = 1;", nil, nil, nil) == SQLITE_OK)
        var ins: OpaquePointer?
        try #require(sqlite3_prepare_v2(db, "INSERT INTO users (user, applied_seq, event_now, state) VALUES ('u', 9, NULL, ?1)", -1, &ins, nil) == SQLITE_OK)
        let blob = UserStateCodecTests.v1Blob()
        _ = blob.withUnsafeBytes { sqlite3_bind_blob(ins, 1, $0.baseAddress, Int32($0.count), nil) }
        #expect(sqlite3_step(ins) == SQLITE_DONE)
        sqlite3_finalize(ins)
        sqlite3_close(db)

        let store = try StateStore(path: path)
        let first = try #require(try store.load().users.first)
        #expect(first.appliedSeq == 9)
        let snapshot = try #require(first.state)
        let st = snapshot.restored
        #expect(st.openDays.map(\.day) == [20_500, 20_501] && st.openDays.allSatisfy(\.dirty))
        // Written back in the current form: a v3 head and one row per open day.
        _ = try store.commit(users: [.init(user: "u", appliedSeq: 9, eventNow: nil, state: snapshot)], outbox: [])
        #expect(try rows(path) == [20_500, 20_501])
        let again = try #require(try StateStore(path: path).load().users.first?.state?.restored)
        #expect(again.openDayValues == st.openDayValues)
        #expect(again.alerts == st.alerts && again.events.keys.sorted() == st.events.keys.sorted())
    }
}
