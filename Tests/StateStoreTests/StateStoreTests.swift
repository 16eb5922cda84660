import CSQLite
import Foundation
import MobilityModel
import RuleLanguage
import StateStore
import Synchronization
import TestSupport
import Testing

@testable import RuleEngine

private func tempDir() -> String {
    let d = TemporaryPath.make("mw-store")
    try? FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
    return d
}

/// The page size of the database at `path`.
private func pageSize(_ path: String) -> Int64 {
    var db: OpaquePointer?
    guard sqlite3_open(path, &db) == SQLITE_OK else { return -1 }
    defer { sqlite3_close(db) }
    var s: OpaquePointer?
    sqlite3_prepare_v2(db, "PRAGMA page_size", -1, &s, nil)
    defer { sqlite3_finalize(s) }
    return sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1
}

@Suite struct StateStoreTests {
    /// The SQLite store keeps no stream positions: a commit that carries one is refused whole
    /// (nothing of it written), not committed without its position.
    @Test func aCommitWithAStreamPositionIsRefusedAndWritesNothing() throws {
        let store: any StateBackend = try StateStore(path: tempDir() + "/s.sqlite")
        #expect {
            _ = try store.commit(
                users: [.init(user: "u", appliedSeq: 7, eventNow: nil, state: nil)], outbox: [.init(topic: "t", payload: [1], retain: false)],
                acknowledged: [], history: [], audited: [], streamSequences: [0: 7])
        } throws: { "\($0)".contains("PostgreSQL") }
        let (users, outbox) = try store.load(alertNames: [], prepare: { $0 })
        #expect(users.isEmpty && outbox.isEmpty)
    }

    /// A new store has 8 KiB pages (a full open-day chunk row fits in its page); a store made
    /// with 4 KiB pages keeps them and works as before.
    @Test func aNewStoreHas8KiBPagesAndAnOlderOneKeepsItsOwn() throws {
        let dir = tempDir()
        let fresh = dir + "/new.sqlite"
        _ = try StateStore(path: fresh).commit(users: [], outbox: [.init(topic: "t", payload: [1], retain: false)])
        #expect(pageSize(fresh) == 8192)
        let older = dir + "/old.sqlite"
        var db: OpaquePointer?
        #expect(sqlite3_open(older, &db) == SQLITE_OK)
        #expect(sqlite3_exec(db, "PRAGMA page_size=4096; PRAGMA journal_mode=WAL; CREATE TABLE before_us (x);", nil, nil, nil) == SQLITE_OK)
        sqlite3_close(db)
        let payload = [UInt8](repeating: 7, count: 3_000)
        let ids = try StateStore(path: older).commit(users: [], outbox: [.init(topic: "t", payload: payload, retain: true)])
        #expect(pageSize(older) == 4096)
        let (_, outbox) = try StateStore(path: older).load()
        #expect(outbox.map(\.id) == ids && outbox.first?.payload == payload)
    }

    /// Under continuous commits, with a thread checkpointing as the daemon's checkpoint timer does,
    /// the WAL starts over once it holds the restart size, so the file stays bounded (7.8 MB at
    /// most here, with a 1 MiB restart size). With PASSIVE passes alone it never started over
    /// (frames committed during each copy were always left) and grew by every commit: 274 MB
    /// for the 40 MB of rows below. (The checkpoints run back to back here, not every 50 ms.)
    @Test func theWALStaysBoundedUnderContinuousCommits() throws {
        let path = tempDir() + "/wal.sqlite"
        let restart: Int64 = 128  // 1 MiB of 8 KiB frames (the daemon's default is 32 MiB)
        let store = try StateStore(path: path, autoCheckpoint: false, walRestartFrames: restart)
        let stop = Atomic<Bool>(false)
        let passes = Atomic<Int>(0)
        let stopped = DispatchSemaphore(value: 0)
        let checkpointing = Thread {
            while !stop.load(ordering: .relaxed) {
                if (try? store.checkpoint()) != nil { passes.add(1, ordering: .relaxed) }
            }
            stopped.signal()
        }
        checkpointing.start()
        let payload = [UInt8](repeating: 7, count: 6_000)  // an outbox row fills most of a page
        var last: [Int64] = []
        var largest: Int64 = 0
        var written = 0
        while written < 40_000_000 {
            // Each commit adds a row and deletes the one before: the database stays one row, the
            // WAL gets the changed pages of every commit.
            last = try store.commit(users: [], outbox: [.init(topic: "t", payload: payload, retain: false)], acknowledged: last)
            written += payload.count
            let size = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int64) ?? 0
            largest = max(largest, size)
        }
        stop.store(true, ordering: .relaxed)
        stopped.wait()
        #expect(passes.load(ordering: .relaxed) > 0)
        // What commits add while a pass syncs depends on the disk and on how often the
        // checkpointer gets the writer's lock on a loaded machine, so the bound is loose: three
        // times the rows written (seen: 8 MB idle, 50–87 MB with the machine's two cores busy). A
        // WAL that grows by every commit gets 5–7 times the rows (204–274 MB).
        #expect(largest < 3 * Int64(written), "the WAL reached \(largest) bytes")
    }

    /// A user state with every kind of content, built through the real engine.
    func populatedEngine() throws -> Engine {
        let p = try #require(
            Checker.check(
                text: """
                    series s = p95(walkingSpeed)
                    alert slow { when mean(s, 3 d) < 1 m/s
                      for 1 d }
                    """
            ).program)
        var e = Engine(program: p)
        var out: [EngineOutput] = []
        let tz = try #require(LocalCalendar(identifier: "Europe/Zurich"))
        e.setProfile(user: "u", calendar: tz)
        e.record(event: TimelineEvent(id: "i", category: .clinical, kind: "injury", firstDay: 20_500, lastDay: 20_500), user: "u")
        e.record(event: TimelineEvent(id: "h", category: .annotation, kind: "heat_wave", firstDay: 20_501, lastDay: 20_503, note: "hot"), user: "u")
        for d in 0..<6 {
            let t = tz.startOfDay(DayNumber(20_500 + d)).adding(seconds: 36_000)
            e.ingest(
                Sample(
                    id: "s\(d)", metric: .walkingSpeed, value: 0.8, start: t, end: t,
                    metadata: [MetadataKey.syncIdentifier: .string("k\(d)"), MetadataKey.syncVersion: .number(1)]), user: "u", now: t, into: &out)
        }
        e.advance(to: tz.startOfDay(20_506).adding(seconds: 7200), into: &out)
        #expect(e.state(of: "u")!.alerts["slow"]?.isFiring == true)
        return e
    }

    /// A deletion that overtook its sample and a newer sync version that came first survive a
    /// restart through SQLite: the late sample is dropped, the older version is stale.
    @Test func tombstonesAndTheSyncIndexSurviveTheStore() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let program = Checker.check(text: "series n = count(walkingSpeed)").program!
        var e = Engine(program: program)
        var out: [EngineOutput] = []
        let t = Timestamp(seconds: 1_770_000_000)
        func speed(_ id: String, version: Int? = nil) -> Sample {
            let meta: [String: MetadataValue] =
                version.map { [MetadataKey.syncIdentifier: .string("K"), MetadataKey.syncVersion: .number(Double($0))] } ?? [:]
            return Sample(id: id, metric: .walkingSpeed, value: 1.2, start: t, end: t, provenance: .device, metadata: meta)
        }
        e.delete(ids: ["late"], user: "u", now: t)
        #expect(e.ingest(speed("v2", version: 2), user: "u", now: t, into: &out) == .accepted)
        let store = try StateStore(path: dir + "/s.sqlite")
        _ = try store.commit(users: [.init(user: "u", appliedSeq: 1, eventNow: t, state: e.changes(of: "u"))], outbox: [])
        let (users, _) = try StateStore(path: dir + "/s.sqlite").load()
        var restarted = Engine(program: program)
        restarted.restore(try #require(users.first?.state))
        #expect(restarted.ingest(speed("late"), user: "u", now: t, into: &out) == .deleted)
        #expect(restarted.ingest(speed("v1", version: 1), user: "u", now: t, into: &out) == .stale)
    }

    /// Acknowledged outbox ids are deleted a run of consecutive ids at a time: exactly the ids
    /// acknowledged go, in any order and with duplicates, also runs with gaps between them and
    /// ids acknowledged across several commits.
    @Test func acknowledgedRunsDeleteExactlyTheAcknowledgedItems() throws {
        #expect(StateStore.runs([]) == [])
        #expect(StateStore.runs([7, 3, 4, 4, 5, 9, 10, 1]) == [1...1, 3...5, 7...7, 9...10])
        #expect(StateStore.runs([.max, .max - 1]) == [(Int64.max - 1)...Int64.max])
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try StateStore(path: dir + "/s.sqlite")
        let ids = try store.commit(users: [], outbox: (0..<40).map { .init(topic: "t\($0)", payload: [UInt8($0)], retain: false) })
        var rng = SplitMix64(seed: 5)
        var acked = ids.filter { _ in rng.next() % 3 != 0 }
        acked += acked.prefix(4)  // a duplicate acknowledgement
        acked.shuffle(using: &rng)
        let half = acked.count / 2
        _ = try store.commit(users: [], outbox: [], acknowledged: Array(acked[..<half]))
        _ = try store.commit(users: [.init(user: "u", appliedSeq: 1, eventNow: nil, state: nil)], outbox: [], acknowledged: Array(acked[half...]))
        let left = try StateStore(path: dir + "/s.sqlite").load().outbox
        let expected = ids.filter { !acked.contains($0) }
        #expect(left.map(\.id) == expected && !expected.isEmpty)
        #expect(left.map(\.topic) == expected.map { "t\($0 - ids[0])" })
    }

    /// A commit's outbox goes in multi-row inserts (64, 16, 4 and 1 rows a statement): every
    /// size hands out the ids in the items' order, each the id its row is stored under, and ids
    /// keep growing past acknowledged (deleted) items, never reused.
    @Test func multiRowOutboxInsertsReturnEachRowsIdInOrder() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try StateStore(path: dir + "/s.sqlite")
        var all: [(id: Int64, topic: String, payload: [UInt8], retain: Bool)] = []
        var previous: Int64 = 0
        for (round, count) in [1, 3, 4, 7, 16, 21, 64, 64 + 16 + 4 + 3, 150].enumerated() {
            let items = (0..<count).map { k in
                StateStore.OutboxItem(topic: "t\(round)/\(k)", payload: Array(repeating: UInt8(truncatingIfNeeded: k), count: k % 5), retain: k % 2 == 0)
            }
            let ids = try store.commit(users: [], outbox: items)
            #expect(ids.count == count)
            #expect(ids.first.map { $0 > previous } == true)
            #expect(zip(ids, ids.dropFirst()).allSatisfy { $0 + 1 == $1 })
            previous = ids.last ?? previous
            all += zip(ids, items).map { ($0, $1.topic, $1.payload, $1.retain) }
            if round == 6 {  // the newest items acknowledged: later ids still grow past them
                _ = try store.commit(users: [], outbox: [], acknowledged: ids)
                all.removeLast(ids.count)
            }
        }
        let stored = try StateStore(path: dir + "/s.sqlite").load().outbox
        #expect(stored.map(\.id) == all.map(\.id))
        #expect(stored.map(\.topic) == all.map(\.topic))
        #expect(stored.map(\.payload) == all.map(\.payload))
        #expect(stored.map(\.retain) == all.map(\.retain))
    }

    @Test func commitLoadRoundTripsUserStateAndOutbox() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let engine = try populatedEngine()
        let state = engine.state(of: "u")!
        let store = try StateStore(path: dir + "/s.sqlite")
        let ids = try store.commit(
            users: [
                .init(user: "u", appliedSeq: 42, eventNow: Timestamp(seconds: 99), eventClaims: [200_000, -5], state: engine.changes(of: "u")),
                .init(user: "ghost", appliedSeq: 7, eventNow: nil, state: nil)
            ],
            outbox: [.init(topic: "a", payload: [1, 2], retain: true), .init(topic: "b", payload: [], retain: false)])
        #expect(ids.count == 2)
        try store.acknowledge([ids[0]])
        let reopened = try StateStore(path: dir + "/s.sqlite")
        let (users, outbox) = try reopened.load()
        #expect(outbox.map(\.topic) == ["b"])
        let u = try #require(users.first { $0.user == "u" })
        #expect(u.appliedSeq == 42 && u.eventNow == Timestamp(seconds: 99) && u.eventClaims == [200_000, -5])
        #expect(try #require(users.first { $0.user == "ghost" }).eventClaims.isEmpty)
        let snapshot = try #require(u.state)
        let r = snapshot.restored
        #expect(r.calendar.identifier == "Europe/Zurich" && r.hasProfile)
        #expect(r.firstDay == state.firstDay && r.lastClosedDay == state.lastClosedDay)
        #expect(r.openDays.map(\.day) == state.openDays.map(\.day) && r.openValueCount == 6)
        #expect(r.openDayValues == state.openDayValues)
        #expect(r.foldedDayList == state.foldedDayList && r.foldedInputs == state.foldedInputs)
        #expect(r.syncIndex == state.syncIndex && r.syncIndex.count == 6 && r.events.count == 2 && r.boundaries == [20_500])
        #expect(r.alerts == state.alerts)
        // The days' alert changes, which a revision starts from (an optional section of the head).
        #expect(r.alertLog == state.alertLog && !state.alertLog.isEmpty)
        #expect(users.first { $0.user == "ghost" }?.state == nil)
        // The restored engine continues exactly: the next day's evaluation matches an uninterrupted engine.
        var a = engine, b = Engine(program: engine.program)
        b.restore(snapshot)
        var outA: [EngineOutput] = [], outB: [EngineOutput] = []
        let later = Timestamp(seconds: Int64(20_510) * 86_400)
        a.advance(to: later, into: &outA)
        b.advance(to: later, into: &outB)
        #expect(outA == outB && !outA.isEmpty)
    }

    @Test func parallelLoadReadsWhatASequentialLoadReads() throws {
        // 41 users (odd, so the halves differ), some without state, each with open-day rows and
        // a value of its own. Ids whose byte order (SQLite's) differs from Swift's string order
        // (a decomposed "é" sorts before "f" in Swift, after it in bytes) test the merge of heads
        // and rows, which relies on byte order.
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let ids = (0..<41).map { i in ["user-\(i)", "e\u{301}-\(i)", "f-\(i)", "Z\(i)", "ü\(i)"][i % 5] }
        var engine = Engine(program: try populatedEngine().program)
        var out: [EngineOutput] = []
        for (i, id) in ids.enumerated() where i % 7 != 0 {
            for d in 0..<6 {
                let t = Timestamp(seconds: Int64(20_500 + d) * 86_400 + 36_000)
                engine.ingest(Sample(id: "s\(i)-\(d)", metric: .walkingSpeed, value: 0.5 + Double(i) / 100, start: t, end: t), user: id, now: t, into: &out)
            }
        }
        let store = try StateStore(path: dir + "/s.sqlite")
        let records = ids.enumerated().map { i, id in
            StateStore.UserRecord(user: id, appliedSeq: UInt64(i), eventNow: nil, state: engine.changes(of: id))
        }
        _ = try store.commit(users: records, outbox: [])
        let sequential = try StateStore(path: dir + "/s.sqlite")
        sequential.parallelLoadThreshold = .max
        let parallel = try StateStore(path: dir + "/s.sqlite")
        parallel.parallelLoadThreshold = 2
        let a = try sequential.load().users.sorted { $0.appliedSeq < $1.appliedSeq }
        let b = try parallel.load(alertNames: engine.alertNames).users.sorted { $0.appliedSeq < $1.appliedSeq }
        #expect(a.count == 41 && b.count == 41)
        #expect(a.map(\.user) == ids && b.map(\.user) == ids)
        #expect(a.map { $0.state } == b.map { $0.state })
        for (i, r) in b.enumerated() {
            guard i % 7 != 0 else { #expect(r.state == nil, "\(r.user) had no state"); continue }
            let snapshot = try #require(r.state, "\(r.user) lost its state")
            let st = snapshot.restored
            #expect(st.user == r.user && st.openValueCount == 6)
            #expect(st.openDayValues.joined().allSatisfy { $0.value == 0.5 + Double(i) / 100 }, "\(r.user) holds another user's rows")
            // Restored states share the rules' alert-name array instead of holding copies.
            var restoredEngine = Engine(program: engine.program)
            restoredEngine.restore(snapshot)
            #expect(
                restoredEngine.state(of: r.user)!.alertNames.withUnsafeBufferPointer { $0.baseAddress }
                    == restoredEngine.alertNames.withUnsafeBufferPointer { $0.baseAddress })
        }
    }

    @Test func schemaIsVersioned() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/s.sqlite"
        _ = try StateStore(path: path)
        #expect(try userVersion(path) == Int32(StateStore.schemaVersion))  // migrations ran to the current version
        // A store written by a newer build is refused rather than misread.
        var db: OpaquePointer?
        try #require(sqlite3_open(path, &db) == SQLITE_OK)
        #expect(sqlite3_exec(db, "PRAGMA user_version = 99", nil, nil, nil) == SQLITE_OK)
        sqlite3_close(db)
        #expect(throws: SQLiteError.self) { _ = try StateStore(path: path) }
    }

    func userVersion(_ path: String) throws -> Int32 {
        var db: OpaquePointer?, stmt: OpaquePointer?
        try #require(sqlite3_open(path, &db) == SQLITE_OK)
        defer { sqlite3_finalize(stmt); sqlite3_close(db) }
        try #require(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, nil) == SQLITE_OK)
        try #require(sqlite3_step(stmt) == SQLITE_ROW)
        return sqlite3_column_int(stmt, 0)
    }

    @Test func journalAppendsReplaysAndSurvivesATornTail() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let j = try IngestJournal(directory: dir, segmentBytes: 300)
        for i in 1...20 { #expect(try j.append(topic: "t/\(i)", payload: Array("payload \(i)".utf8)) == UInt64(i)) }
        // A crash in the middle of a write leaves a partial record at the end.
        let last = IngestJournalTestHelper.segments(dir).last!
        let h = try #require(FileHandle(forWritingAtPath: last))
        h.seekToEndOfFile()
        h.write(Data([0x4D, 0x57, 0x4A, 0x31, 21, 0, 0]))
        h.closeFile()
        var seen: [UInt64] = []
        IngestJournal.replay(dir) { seen.append($0.seq) }
        #expect(seen == Array(1...20))
        // Topics and payloads come back byte for byte (one writev of header, topic, payload, CRC).
        IngestJournal.replay(dir) { e in
            #expect(e.topic == "t/\(e.seq)" && e.payload == Array("payload \(e.seq)".utf8), "record \(e.seq)")
        }
        let reopened = try IngestJournal(directory: dir, segmentBytes: 300)
        #expect(reopened.lastSeq == 20)
        #expect(try reopened.append(topic: "t/21", payload: [1]) == 21)
        #expect(try reopened.append(topic: "t/ü", payload: []) == 22)  // an empty payload (a cleared retained profile)
        seen = []
        var tail: [IngestJournal.Entry] = []
        IngestJournal.replay(dir) {
            seen.append($0.seq); if $0.seq > 20 { tail.append($0) }
        }
        #expect(seen == Array(1...22))
        #expect(tail.map(\.topic) == ["t/21", "t/ü"] && tail.map(\.payload) == [[1], []])
        // Segments wholly committed are released; the one being written stays.
        let before = IngestJournalTestHelper.segments(dir).count
        #expect(before > 2)
        reopened.release(through: 15)
        seen = []
        IngestJournal.replay(dir) { seen.append($0.seq) }
        #expect(seen.first! > 1 && seen.first! <= 16 && seen.last == 22)
        reopened.release(through: 1000)
        #expect(IngestJournalTestHelper.segments(dir).count == 1)
    }
}

enum IngestJournalTestHelper {
    static func segments(_ dir: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(".log") }.sorted().map { dir + "/" + $0 }
    }
}
