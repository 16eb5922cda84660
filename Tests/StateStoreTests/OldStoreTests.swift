import CSQLite
import Foundation
import MobilityModel
import RuleLanguage
import StateStore
import TestSupport
import Testing

@testable import RuleEngine

/// The store seam changed no byte of the store format: a state written by the build before it
/// (``OldStoreFixture``) loads and restores to the state that build held, and this build writes
/// the same bytes for that state.
@Suite struct OldStoreTests {
    static let rules = """
        series s = p95(walkingSpeed)
        series n = count(walkingSpeed, source: device)
        alert slow { when mean(s, 3 d) < 1 m/s
          for 2 d }
        """
    // The fixture was written with `for 1 d`, which fired on the second true day until that was
    // fixed; `for 2 d` fires there now, so the same state (and bytes) results.

    /// The old build's engine: no revisions, so retention keeps the days it kept and the state
    /// has no alert log (a state with one writes it in an optional section after the old bytes).
    static var configuration: EngineConfiguration {
        var c = EngineConfiguration()
        c.revisionDays = 0
        return c
    }

    /// The user the fixture was written from (the same code ran in the old build).
    static func populated() throws -> Engine {
        let p = try #require(Checker.check(text: rules).program)
        var e = Engine(program: p, configuration: configuration)
        var out: [EngineOutput] = []
        let tz = try #require(LocalCalendar(identifier: "Europe/Zurich"))
        e.setProfile(user: "u", calendar: tz)
        e.record(event: TimelineEvent(id: "i", category: .clinical, kind: "injury", firstDay: 20_500, lastDay: 20_500), user: "u")
        e.record(event: TimelineEvent(id: "h", category: .annotation, kind: "heat_wave", firstDay: 20_501, lastDay: 20_503, note: "hot"), user: "u")
        for d in 0..<20 where d != 4 {
            let t = tz.startOfDay(DayNumber(20_500 + d)).adding(seconds: 36_000)
            for j in 0..<(d == 18 ? 70 : 3) {
                e.ingest(
                    Sample(
                        id: "s\(d)-\(j)", metric: .walkingSpeed, value: 0.7 + Double(j % 5) * 0.05, start: t, end: t,
                        provenance: j == 1 ? .userEntered : .device,
                        metadata: j == 0 ? [MetadataKey.syncIdentifier: .string("k\(d)"), MetadataKey.syncVersion: .number(1)] : [:]),
                    user: "u", now: t, into: &out)
            }
            e.advance(to: t, into: &out)
        }
        let late = tz.startOfDay(20_517).adding(seconds: 40_000)
        e.ingest(
            Sample(id: "late", metric: .walkingSpeed, value: 1.4, start: late, end: late), user: "u",
            now: tz.startOfDay(20_519).adding(seconds: 40_000), into: &out)
        return e
    }

    static func bytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.utf8.filter { $0 != 0x20 && $0 != 0x0A })
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<($0 + 2)], as: UTF8.self), radix: 16)! }
    }

    func tempPath() -> String {
        let d = TemporaryPath.make("mw-old")
        try? FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d + "/s.sqlite"
    }

    func remove(_ path: String) { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }

    /// Runs `sql` with blob parameters.
    func exec(_ path: String, _ sql: String, _ blobs: [[UInt8]] = []) throws {
        var db: OpaquePointer?, st: OpaquePointer?
        try #require(sqlite3_open(path, &db) == SQLITE_OK)
        defer { sqlite3_finalize(st); sqlite3_close(db) }
        try #require(sqlite3_prepare_v2(db, sql, -1, &st, nil) == SQLITE_OK)
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        for (i, b) in blobs.enumerated() { _ = b.withUnsafeBytes { sqlite3_bind_blob(st, Int32(i + 1), $0.baseAddress, Int32($0.count), transient) } }
        try #require(sqlite3_step(st) == SQLITE_DONE)
    }

    /// The head and rows a store holds for user `u`.
    func stored(_ path: String) throws -> (head: [UInt8], rows: [(Int64, Int64, [UInt8])]) {
        var db: OpaquePointer?, st: OpaquePointer?
        try #require(sqlite3_open(path, &db) == SQLITE_OK)
        defer { sqlite3_close(db) }
        func blob(_ c: Int32) -> [UInt8] {
            let n = Int(sqlite3_column_bytes(st, c))
            return n == 0 ? [] : Array(UnsafeRawBufferPointer(start: sqlite3_column_blob(st, c), count: n))
        }
        try #require(sqlite3_prepare_v2(db, "SELECT state FROM users WHERE user = 'u'", -1, &st, nil) == SQLITE_OK)
        try #require(sqlite3_step(st) == SQLITE_ROW)
        let head = blob(0)
        sqlite3_finalize(st)
        try #require(sqlite3_prepare_v2(db, "SELECT day, chunk, data FROM user_days WHERE user = 'u' ORDER BY day, chunk", -1, &st, nil) == SQLITE_OK)
        var rows: [(Int64, Int64, [UInt8])] = []
        while sqlite3_step(st) == SQLITE_ROW { rows.append((sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), blob(2))) }
        sqlite3_finalize(st)
        return (head, rows)
    }

    @Test func aStateWrittenBeforeTheSeamLoadsAsTheStateItWas() throws {
        let path = tempPath()
        defer { remove(path) }
        _ = try StateStore(path: path)  // schema 4
        try exec(path, "INSERT INTO users (user, applied_seq, event_now, state) VALUES ('u', 5, NULL, ?1)", [OldStoreTests.bytes(OldStoreFixture.head)])
        for r in OldStoreFixture.rows {
            try exec(path, "INSERT INTO user_days (user, day, chunk, data) VALUES ('u', \(r.day), \(r.chunk), ?1)", [OldStoreTests.bytes(r.data)])
        }
        let original = try OldStoreTests.populated()
        let st = try #require(original.state(of: "u"))
        let records = try StateStore(path: path).load(alertNames: original.alertNames).users
        let snapshot = try #require(records.first?.state)
        #expect(records.count == 1 && records[0].appliedSeq == 5)
        var e = Engine(program: original.program, configuration: OldStoreTests.configuration)
        e.restore(snapshot)
        let back = try #require(e.state(of: "u"))
        #expect(back.calendar.identifier == "Europe/Zurich" && back.hasProfile && back.firstDay == st.firstDay && back.lastClosedDay == st.lastClosedDay)
        #expect(back.foldedDayList == st.foldedDayList && back.foldedInputs == st.foldedInputs && !st.foldedRuns.isEmpty)
        #expect(back.openDays.map(\.day) == st.openDays.map(\.day) && back.openDayValues == st.openDayValues)
        #expect(back.syncIndex == st.syncIndex && back.events == st.events && back.boundaries == st.boundaries)
        #expect(back.alertStates == st.alertStates && back.alerts["slow"]?.isFiring == true && back.revisedDays == st.revisedDays)
        #expect(back.openDays.allSatisfy { !$0.dirty })
        // Made on the load's threads (as mobilityd loads), the same state; made for other rules,
        // re-aligned with these on restore (as a reload would: folded values of inputs the other
        // rules lack are gone).
        var viaPreparer = Engine(program: original.program, configuration: OldStoreTests.configuration)
        for r in try StateStore(path: path).load(alertNames: original.alertNames, prepare: viaPreparer.preparer).users {
            let prepared = try #require(r.state)
            viaPreparer.restore(prepared)
        }
        #expect(viaPreparer.snapshot(of: "u") == e.snapshot(of: "u") && viaPreparer.firingCounts == e.firingCounts)
        let other = Engine(
            program: try #require(Checker.check(text: "series s = mean(walkingSpeed)\nalert fresh { when s > 9 m/s }\nalert slow { when s < 1 m/s }").program))
        var realigned = Engine(program: original.program, configuration: OldStoreTests.configuration)
        for r in try StateStore(path: path).load(prepare: other.preparer).users {
            let prepared = try #require(r.state)
            realigned.restore(prepared)
        }
        #expect(realigned.state(of: "u")!.alertNames == ["slow"] && realigned.state(of: "u")!.alertStates == back.alertStates)
        #expect(realigned.firingCounts == e.firingCounts && realigned.state(of: "u")!.foldedInputs == original.program.inputs)
        // And it goes on as the old engine would have.
        var a = original, outA: [EngineOutput] = [], outB: [EngineOutput] = []
        let later = Timestamp(seconds: Int64(20_530) * 86_400)
        a.advance(to: later, into: &outA)
        e.advance(to: later, into: &outB)
        #expect(outA == outB && !outA.isEmpty)
    }

    @Test func theSeamWritesTheBytesTheOldStoreWrote() throws {
        let path = tempPath()
        defer { remove(path) }
        let e = try OldStoreTests.populated()
        _ = try StateStore(path: path).commit(users: [.init(user: "u", appliedSeq: 5, eventNow: nil, state: e.changes(of: "u"))], outbox: [])
        let (head, rows) = try stored(path)
        #expect(head == OldStoreTests.bytes(OldStoreFixture.head))
        #expect(rows.map { [$0.0, $0.1] } == OldStoreFixture.rows.map { [$0.day, $0.chunk] })
        for (r, old) in zip(rows, OldStoreFixture.rows) { #expect(r.2 == OldStoreTests.bytes(old.data), "day \(r.0) chunk \(r.1)") }
    }
}
