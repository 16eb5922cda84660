import CSQLite
import MobilityModel

/// One row of a user's history: what the care-team reports are built from. Written in the same
/// transaction as the state and outputs that produced it (``StateStore/commit(users:outbox:acknowledged:history:)``).
package struct HistoryRecord: Sendable, Equatable {
    /// What a row holds.
    package enum Kind: Int64, Sendable {
        /// A series point: `key` the series, `value` its value (nil: missing), `payload` its unit.
        case series = 0
        /// An alert transition: `key` the instance id and status, `payload` the transition's JSON.
        case alert = 1
        /// A timeline entry: `key` its id, `day` its last day, `payload` its JSON (re-sending an id
        /// replaces its row; an empty payload, ``HistoryRecord/retracted(user:id:)``, removes it).
        case timeline = 2
        /// A weekly report: `key` the week (`2026-W10`), `day` its Monday, `payload` the digest's JSON.
        case weekly = 3
    }

    /// The user.
    package var user: String
    /// The kind.
    package var kind: Kind
    /// The key within the kind.
    package var key: String
    /// The local day it belongs to.
    package var day: DayNumber
    /// A series value.
    package var value: Double?
    /// The row's bytes.
    package var payload: [UInt8]

    package init(user: String, kind: Kind, key: String, day: DayNumber, value: Double? = nil, payload: [UInt8] = []) {
        self.user = user
        self.kind = kind
        self.key = key
        self.day = day
        self.value = value
        self.payload = payload
    }

    /// The row of a series point (a revised day replaces the earlier row).
    package static func series(_ p: SeriesPoint) -> HistoryRecord {
        HistoryRecord(user: p.user, kind: .series, key: p.name, day: p.day.dayNumber, value: p.value, payload: Array(p.unit.utf8))
    }

    /// The row of an alert transition. A withdrawal has a row of its own: an episode that had
    /// resolved keeps its resolution beside it. So has a firing published again after its day
    /// (a revision found the alert goes on after its end, or supports it again): the first
    /// firing's row stays.
    package static func alert(_ a: AlertTransition) -> HistoryRecord {
        let firing = a.isRepeat ? "/repeat" : a.day == a.firedDay ? "/firing" : "/reopened"
        let kind = a.status == .firing ? firing : a.isWithdrawal ? "/withdrawn" : "/" + a.status.rawValue
        return HistoryRecord(user: a.user, kind: .alert, key: a.id + kind, day: a.day.dayNumber, payload: Array(a.json.utf8))
    }

    /// The row of a timeline entry.
    package static func timeline(user: String, _ e: TimelineEvent) -> HistoryRecord {
        var w = JSONWriter()
        w.beginObject()
        w.string("id", e.id)
        w.string("category", e.category.description)
        w.string("kind", e.kind)
        w.number("firstDay", Double(e.firstDay))
        w.number("lastDay", Double(e.lastDay))
        if let n = e.note { w.string("note", n) }
        if let a = e.entered {
            w.beginObject("entered")
            w.string("by", a.by)
            w.string("team", a.team)
            w.string("at", a.at.description)
            w.endObject()
        }
        w.endObject()
        return HistoryRecord(user: user, kind: .timeline, key: e.id, day: e.lastDay, payload: Array(w.text.utf8))
    }

    /// The row that removes a retracted timeline entry's row (no payload).
    package static func retracted(user: String, id: String) -> HistoryRecord {
        HistoryRecord(user: user, kind: .timeline, key: id, day: 0, payload: [])
    }

    /// Decodes a timeline row's payload; nil if malformed.
    package static func timelineEntry(_ payload: [UInt8]) -> TimelineEvent? {
        guard case .success(let v) = JSONValue.parse(payload), case .string(let id)? = v["id"], case .string(let c)? = v["category"],
            case .string(let kind)? = v["kind"], case .number(let f)? = v["firstDay"], case .number(let l)? = v["lastDay"],
            let category: EventCategory = c == "clinical" ? .clinical : c == "annotation" ? .annotation : nil,
            let first = DayNumber(exactly: f), let last = DayNumber(exactly: l)
        else { return nil }
        var note: String?
        if case .string(let n)? = v["note"] { note = n }
        var entered: EntryAttribution?
        if let a = v["entered"] {
            guard case .string(let by)? = a["by"], case .string(let team)? = a["team"], case .string(let at)? = a["at"],
                let time = ISO8601.parse(at)?.0
            else { return nil }
            entered = EntryAttribution(by: by, team: team, at: time)
        }
        return TimelineEvent(id: id, category: category, kind: kind, firstDay: first, lastDay: last, note: note, entered: entered)
    }
}

/// A history row the store cannot read back: an error naming the user and the row, never a guess.
package struct HistoryDecodingError: Error, CustomStringConvertible, Sendable {
    /// What is wrong.
    package var description: String
}

extension HistoryDecodingError {
    /// An error saying what is wrong (for the other backends).
    package init(_ description: String) { self.description = description }
}

extension StateStore {
    /// SQL of the history table (schema 5).
    ///
    /// Series points are packed a row per user-day (`history_days`: a series id and a value per
    /// point, the names in `history_series`): a day close writes one row per user instead of one
    /// per series (measured: docs/benchmarks.md "History").
    static let historyMigration = """
        CREATE TABLE history (user TEXT NOT NULL, kind INTEGER NOT NULL, key TEXT NOT NULL, day INTEGER NOT NULL, value REAL, payload BLOB NOT NULL,
                              PRIMARY KEY (user, kind, key, day)) WITHOUT ROWID;
        CREATE TABLE history_series (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, unit TEXT NOT NULL);
        CREATE TABLE history_days (user TEXT NOT NULL, day INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (user, day)) WITHOUT ROWID;
        """

    /// Writes history rows inside the commit's transaction (call only while holding the lock).
    /// Series points are merged into their user-day's packed row (a revised point replaces its
    /// series' value there); the other rows are upserted by key.
    func write(
        history rows: [HistoryRecord], upsert up: SQLiteDatabase.Statement,
        replacing del: SQLiteDatabase.Statement, insertDay: SQLiteDatabase.Statement, readDay: SQLiteDatabase.Statement,
        writeDay: SQLiteDatabase.Statement
    ) throws(SQLiteError) {
        // A user-day's points come one after another (the engine emits a day's series together):
        // grouped as they come, the map consulted only when the user-day changes; series ids from
        // a short list of this call's names before the shared cache.
        var days: [(key: UserDay, points: [(id: Int64, value: Double?)])] = []
        var index: [UserDay: Int] = [:]
        var names: [(name: String, id: Int64)] = []
        var current = -1  // the user-day of the last point (compared in place: a copy of it would copy its points on append)
        for r in rows {
            if r.kind == .series {
                let id: Int64
                if let known = names.first(where: { $0.name == r.key }) {
                    id = known.id
                } else {
                    id = try seriesID(r.key, unit: r.payload)
                    if names.count < 64 { names.append((r.key, id)) }
                }
                if current >= 0, days[current].key.day == r.day, days[current].key.user == r.user {
                    days[current].points.append((id, r.value))
                } else {
                    let key = UserDay(user: r.user, day: r.day)
                    if let k = index[key] {
                        current = k
                    } else {
                        current = days.count
                        index[key] = current
                        days.append((key, []))
                        days[current].points.reserveCapacity(16)
                    }
                    days[current].points.append((id, r.value))
                }
                continue
            }
            if r.kind == .timeline {  // an entry re-sent with other dates replaces its row; a retraction removes it
                del.bind(1, r.user)
                del.bind(2, r.key)
                try del.run()
                if r.payload.isEmpty { continue }
            }
            up.bind(1, r.user)
            up.bind(2, r.kind.rawValue)
            up.bind(3, r.key)
            up.bind(4, Int64(r.day))
            if let v = r.value { up.bind(5, double: v) }
            up.bind(6, r.payload)
            try up.run()
        }
        // A user-day's first points (a day close) are inserted in one statement; only a day the
        // store already holds (a revision) is read back and merged (its other series kept).
        for (key, points) in days {
            var packed = SeriesDay(capacity: points.count)
            for p in points { packed.set(p.id, p.value) }
            insertDay.bind(1, key.user)
            insertDay.bind(2, Int64(key.day))
            insertDay.bind(3, packed.bytes)
            try insertDay.run()
            if db.changes == 1 { continue }
            readDay.bind(1, key.user)
            readDay.bind(2, Int64(key.day))
            packed = SeriesDay(capacity: points.count)
            if try readDay.step() { readDay.withBlob(0) { packed = SeriesDay(trusted: $0) } }
            readDay.reset()
            for p in points { packed.set(p.id, p.value) }
            writeDay.bind(1, key.user)
            writeDay.bind(2, Int64(key.day))
            writeDay.bind(3, packed.bytes)
            try writeDay.run()
        }
    }

    /// The id of a series name in `history_series`, created on first use (call under the lock).
    /// The unit (UTF-8, as a series row holds it) is decoded only for a name not seen yet.
    private func seriesID(_ name: String, unit: [UInt8]) throws(SQLiteError) -> Int64 {
        if let id = seriesIDs.withLock({ $0.ids[name] }) { return id }
        let q = try db.prepare("INSERT INTO history_series (name, unit) VALUES (?1, ?2) ON CONFLICT(name) DO UPDATE SET unit = ?2 RETURNING id")
        q.bind(1, name)
        q.bind(2, String(decoding: unit, as: UTF8.self))
        guard try q.step() else { throw SQLiteError(code: -1, message: "history_series: no id for a series") }
        let id = q.int(0)
        q.reset()
        seriesIDs.withLock { $0.ids[name] = id }
        return id
    }

    /// The user's history from `from` through `through` (series, alerts), with the whole timeline.
    /// Series values are in SI units (``UserHistory``); the store keeps them as published.
    /// Alert episodes that fired before `from` and resolved inside the range (or are still active)
    /// are included: an episode is read from its first row on.
    package func history(of user: String, from: DayNumber, through: DayNumber) throws -> UserHistory {
        var h = UserHistory(user: user)
        var alertRows: [(day: DayNumber, key: String, payload: [UInt8])] = []
        var timeline: [TimelineEvent] = []
        try reading { db in
            let d = try db.prepare("SELECT day, data FROM history_days WHERE user = ?1 AND day >= ?2 AND day <= ?3 ORDER BY day")
            d.bind(1, user)
            d.bind(2, Int64(from))
            d.bind(3, Int64(through))
            // Gathered by series in day order (a series id is a small integer: a slot in an array,
            // not a map lookup a point), then each series' map built once at its size: growing a map
            // per series point by point was most of a weekly digest's read.
            var slots = SeriesSlots()
            while try d.step() {
                let day = DayNumber(truncatingIfNeeded: d.int(0))
                let valid = d.withBlob(1) { SeriesDay.visit($0) { id, value in slots.append(id, day, value) } }
                guard valid else {
                    throw HistoryDecodingError(description: "history of user #\(StateStore.fingerprint(user)): unreadable series row of day \(day)")
                }
            }
            for (id, points) in zip(slots.ids, slots.points) {
                guard let s = try db.series(id) else {
                    throw HistoryDecodingError(description: "history of user #\(StateStore.fingerprint(user)): unknown series id \(id)")
                }
                // As UserHistory.record converts a published point: to SI from the series' unit.
                let toSI = (MeasureUnit.rule(s.unit) ?? .one).toSI
                var days = [DayNumber: Double?](minimumCapacity: points.count)
                for p in points { days[p.day] = .some(toSI == 1 ? p.value : p.value.map { $0 * toSI }) }
                h.series[s.name] = days
                h.units[s.name] = s.unit
            }
            let q = try db.prepare("SELECT kind, key, day, value, payload FROM history WHERE user = ?1 AND kind IN (1, 2) AND day <= ?2 ORDER BY kind, day")
            q.bind(1, user)
            q.bind(2, Int64(through))
            while try q.step() {
                let day = DayNumber(truncatingIfNeeded: q.int(2))
                switch q.int(0) {
                case HistoryRecord.Kind.alert.rawValue:
                    guard day <= through else { continue }
                    alertRows.append((day, q.text(1), q.blob(4)))
                default:
                    guard let e = HistoryRecord.timelineEntry(q.blob(4)) else {
                        throw HistoryDecodingError(description: "history of user #\(StateStore.fingerprint(user)): unreadable timeline row \(q.text(1))")
                    }
                    timeline.append(e)
                }
            }
        }
        return try StateStore.assembleHistory(h, from: from, alertRows: alertRows, timeline: timeline)
    }

    /// Completes a user's history (its series already in `h`) from its alert rows (day, key,
    /// transition JSON) and timeline entries, as every backend reads them: transitions in
    /// publication order, episodes over before `from` left out.
    package static func assembleHistory(
        _ history: UserHistory, from: DayNumber, alertRows: [(day: DayNumber, key: String, payload: [UInt8])], timeline: [TimelineEvent]
    ) throws -> UserHistory {
        var h = history, alertRows = alertRows
        let user = h.user
        // Transitions in publication order: by day, a firing before its reminders and its end,
        // and a revision's (a withdrawal, a firing again) after them.
        func rank(_ key: String) -> Int {
            key.hasSuffix("/firing") ? 0 : key.hasSuffix("/repeat") ? 1 : key.hasSuffix("/withdrawn") || key.hasSuffix("/reopened") ? 3 : 2
        }
        alertRows.sort { ($0.day, rank($0.key)) < ($1.day, rank($1.key)) }
        var episodes: [String: (fired: DayNumber, ended: DayNumber?)] = [:]
        var transitions: [AlertTransition] = []
        for r in alertRows {
            guard let a = AlertTransition.parse(r.payload) else {
                throw HistoryDecodingError(description: "history of user #\(StateStore.fingerprint(user)): unreadable alert row \(r.key)")
            }
            transitions.append(a)
            var e = episodes[a.id] ?? (r.day, nil)
            if a.status.isEnded { e.ended = r.day } else if !a.isRepeat { e.ended = nil }
            episodes[a.id] = e
        }
        for a in transitions {
            guard let e = episodes[a.id] else { continue }
            if let r = e.ended, r < from { continue }  // over before the range
            h.record(a)
        }
        for e in timeline { h.record(e) }
        return h
    }

    /// The weekly report of `week` (`2026-W10`), or the latest one when nil: the digest's JSON.
    package func weeklyReport(of user: String, week: String? = nil) throws -> (week: String, payload: [UInt8])? {
        var found: (String, [UInt8])?
        try reading { db in
            let q =
                week == nil
                ? try db.prepare("SELECT key, payload FROM history WHERE user = ?1 AND kind = 3 AND length(payload) > 0 ORDER BY day DESC LIMIT 1")
                : try db.prepare("SELECT key, payload FROM history WHERE user = ?1 AND kind = 3 AND key = ?2 AND length(payload) > 0")
            q.bind(1, user)
            if let week { q.bind(2, week) }
            if try q.step() { found = (q.text(0), q.blob(1)) }
        }
        return found
    }

    /// Weekly rows still due (written as markers, not yet built): `(user, week)`, oldest first.
    package func dueReports() throws -> [(user: String, week: String)] {
        var due: [(String, String)] = []
        try reading { db in
            let q = try db.prepare("SELECT user, key FROM history WHERE kind = 3 AND length(payload) = 0 ORDER BY day, user")
            while try q.step() { due.append((q.text(0), q.text(1))) }
        }
        return due
    }

    /// The weeks the user has reports for, newest first.
    package func reportWeeks(of user: String) throws -> [String] {
        var weeks: [String] = []
        try reading { db in
            let q = try db.prepare("SELECT key FROM history WHERE user = ?1 AND kind = 3 AND length(payload) > 0 ORDER BY day DESC")
            q.bind(1, user)
            while try q.step() { weeks.append(q.text(0)) }
        }
        return weeks
    }

    /// Deletes the user's series, alert and timeline rows before `keepFrom` (timeline entries
    /// that end before it) and weekly reports before `reportsFrom`. Returns the rows deleted.
    @discardableResult
    package func pruneHistory(of user: String, keepFrom: DayNumber, reportsFrom: DayNumber) throws -> Int {
        try pruneHistory([(user: user, keepFrom: keepFrom, reportsFrom: reportsFrom)])
    }

    /// ``pruneHistory(of:keepFrom:reportsFrom:)`` for several users in one transaction.
    @discardableResult
    package func pruneHistory(_ users: [HistoryPrune]) throws -> Int {
        guard !users.isEmpty else { return 0 }
        return try lockedWrite { db in
            try StateStore.prune(users, rows: try db.prepare(StateStore.pruneRowsSQL), days: try db.prepare(StateStore.pruneDaysSQL), changes: { db.changes })
        }
    }

    /// Deletes a user's alert and timeline rows before its `keepFrom` and weekly rows before its `reportsFrom`.
    static let pruneRowsSQL = "DELETE FROM history WHERE user = ?1 AND ((kind IN (1, 2) AND day < ?2) OR (kind = 3 AND day < ?3))"
    /// Deletes a user's series rows before its `keepFrom`.
    static let pruneDaysSQL = "DELETE FROM history_days WHERE user = ?1 AND day < ?2"

    /// Runs the prune statements for each user (inside the caller's transaction); returns the rows deleted.
    static func prune(
        _ users: [HistoryPrune], rows q: SQLiteDatabase.Statement, days d: SQLiteDatabase.Statement, changes: () -> Int32
    ) throws(SQLiteError) -> Int {
        var deleted = 0
        for u in users {
            q.bind(1, u.user)
            q.bind(2, Int64(u.keepFrom))
            q.bind(3, Int64(u.reportsFrom))
            try q.run()
            deleted += Int(changes())
            d.bind(1, u.user)
            d.bind(2, Int64(u.keepFrom))
            try d.run()
            deleted += Int(changes())
        }
        return deleted
    }

    /// Every user with history, sorted.
    package func historyUsers() throws -> [String] {
        var users: [String] = []
        try reading { db in
            let q = try db.prepare("SELECT user FROM history UNION SELECT user FROM history_days ORDER BY user")
            while try q.step() { users.append(q.text(0)) }
        }
        return users
    }
}

/// What a weekly report prunes of its user's history: series, alert and timeline rows before
/// `keepFrom`, weekly reports before `reportsFrom`.
package typealias HistoryPrune = (user: String, keepFrom: DayNumber, reportsFrom: DayNumber)

/// A user and a local day: the key of a packed series row.
struct UserDay: Hashable {
    var user: String
    var day: DayNumber
}

/// One user-day's series values, packed: a count (u16), then per point a series id (u32, little
/// endian), a flag (0 missing, 1 value) and, with a value, its 8 bytes (IEEE 754, little endian).
struct SeriesDay {
    private(set) var points: [(id: Int64, value: Double?)] = []

    init() {}

    /// An empty row with room for `capacity` points.
    init(capacity: Int) { points.reserveCapacity(capacity) }

    /// Reads trusted bytes (written by this store in the same transaction's read).
    init(_ bytes: [UInt8]) { self = SeriesDay(validating: bytes) ?? SeriesDay() }

    /// Reads trusted bytes in place (a row as the store holds it; malformed bytes read as an empty row, as ``init(_:)``).
    init(trusted b: UnsafeRawBufferPointer) {
        var points: [(id: Int64, value: Double?)] = []
        points.reserveCapacity(b.count / 5)
        if SeriesDay.visit(b, { points.append(($0, $1)) }) { self.points = points }
    }

    /// Reads bytes; nil if they are not a well-formed row.
    init?(validating b: [UInt8]) {
        var points: [(id: Int64, value: Double?)] = []
        let ok = b.withUnsafeBytes { raw in SeriesDay.visit(raw) { points.append(($0, $1)) } }
        guard ok else { return nil }
        self.points = points
    }

    /// Calls `body` with each point of a row's bytes, in order, without building the row; false
    /// (after calling it for the points before) if the bytes are not a well-formed row.
    static func visit(_ b: UnsafeRawBufferPointer, _ body: (Int64, Double?) -> Void) -> Bool {
        guard b.count >= 2 else { return false }
        let n = Int(b[0]) | Int(b[1]) << 8
        var i = 2
        for _ in 0..<n {
            guard i + 5 <= b.count else { return false }
            var id: UInt32 = 0
            for k in 0..<4 { id |= UInt32(b[i + k]) << (8 * k) }
            let flag = b[i + 4]
            i += 5
            switch flag {
            case 0: body(Int64(id), nil)
            case 1:
                guard i + 8 <= b.count else { return false }
                var bits: UInt64 = 0
                for k in 0..<8 { bits |= UInt64(b[i + k]) << (8 * k) }
                body(Int64(id), Double(bitPattern: bits))
                i += 8
            default: return false
            }
        }
        return i == b.count
    }

    /// Sets a series' value (replacing an earlier one: a revised day).
    mutating func set(_ id: Int64, _ value: Double?) {
        if let k = points.firstIndex(where: { $0.id == id }) { points[k].value = value } else { points.append((id, value)) }
    }

    /// The row's bytes.
    var bytes: [UInt8] {
        let size = points.reduce(2) { $0 + ($1.value == nil ? 5 : 13) }
        precondition(points.count <= Int(UInt16.max), "a series row holds at most 65 535 points")  // as the format's 16-bit count
        return [UInt8](unsafeUninitializedCapacity: size) { b, count in
            let raw = UnsafeMutableRawBufferPointer(b)
            raw.storeBytes(of: UInt16(truncatingIfNeeded: points.count).littleEndian, toByteOffset: 0, as: UInt16.self)
            var i = 2
            for p in points {
                raw.storeBytes(of: UInt32(truncatingIfNeeded: p.id).littleEndian, toByteOffset: i, as: UInt32.self)
                if let v = p.value {
                    raw[i + 4] = 1
                    raw.storeBytes(of: v.bitPattern.littleEndian, toByteOffset: i + 5, as: UInt64.self)
                    i += 13
                } else {
                    raw[i + 4] = 0
                    i += 5
                }
            }
            count = i
        }
    }
}

/// A history read's series points gathered by series id, in the order the ids first appear.
struct SeriesSlots {
    /// The series ids seen.
    private(set) var ids: [Int64] = []
    /// Each id's points (same index as ``ids``).
    private(set) var points: [[(day: DayNumber, value: Double?)]] = []
    /// Slot of a small id (its index in ``ids``, -1 none); larger ids go through `other`.
    private var small: [Int32] = []
    private var other: [Int64: Int] = [:]

    /// Adds a point of series `id`.
    mutating func append(_ id: Int64, _ day: DayNumber, _ value: Double?) {
        let slot: Int
        if id >= 0, id < 4096 {
            let i = Int(id)
            if i >= small.count { small.append(contentsOf: repeatElement(-1, count: i + 1 - small.count)) }
            if small[i] < 0 {
                small[i] = Int32(ids.count)
                ids.append(id)
                points.append([])
                points[points.count - 1].reserveCapacity(32)  // a digest reads a few weeks of days
            }
            slot = Int(small[i])
        } else if let known = other[id] {
            slot = known
        } else {
            slot = ids.count
            other[id] = slot
            ids.append(id)
            points.append([])
        }
        points[slot].append((day, value))
    }
}

/// The commit path's cache of series ids (a series keeps its id for the store's life).
struct SeriesIDs: Sendable {
    var ids: [String: Int64] = [:]
}

/// The reader connection of the history (reports, the HTTP API), with its statements prepared
/// once and the series names it has seen; used only under the store's reader lock.
final class HistoryReader {
    private let db: SQLiteDatabase
    private var statements: [String: SQLiteDatabase.Statement] = [:]
    private var names: [Int64: (name: String, unit: String)] = [:]
    private var transaction: (begin: SQLiteDatabase.Statement, commit: SQLiteDatabase.Statement)?

    /// Opens a connection that maps the database file (no copy of each page read) with a cache of
    /// its own: a weekly close reads every user's recent days.
    init(path: String) throws(SQLiteError) {
        db = try SQLiteDatabase(path: path)
        try db.exec("PRAGMA mmap_size = 1073741824; PRAGMA cache_size = -65536;")
    }

    /// A statement of `sql`, prepared on first use, reset and unbound.
    func prepare(_ sql: String) throws(SQLiteError) -> SQLiteDatabase.Statement {
        if let s = statements[sql] {
            s.reset()
            return s
        }
        let s = try db.prepare(sql)
        statements[sql] = s
        return s
    }

    /// Starts a read transaction: the statements until ``finish()`` see one snapshot.
    func begin() throws(SQLiteError) {
        if transaction == nil { transaction = (try db.prepare("BEGIN"), try db.prepare("COMMIT")) }
        if sqlite3_get_autocommit(db.handle) == 0 { try? db.exec("ROLLBACK") }  // left open by a COMMIT that failed
        try transaction!.begin.run()
    }

    /// Resets every statement and ends the read transaction: the next read sees the latest
    /// commit (a statement left stepped, or the transaction left open, would pin an old snapshot and the WAL).
    func finish() {
        for s in statements.values { s.reset() }
        if let t = transaction { _ = try? t.commit.run() }
    }

    /// The name and unit of a series id (re-read when a new series appeared since).
    func series(_ id: Int64) throws(SQLiteError) -> (name: String, unit: String)? {
        if let s = names[id] { return s }
        let n = try prepare("SELECT id, name, unit FROM history_series")
        while try n.step() { names[n.int(0)] = (n.text(1), n.text(2)) }
        n.reset()
        return names[id]
    }
}
