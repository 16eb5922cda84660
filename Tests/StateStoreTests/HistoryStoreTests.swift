import CareReports
import Foundation
import MobilityModel
import TestSupport
import Testing

@testable import StateStore

/// The care-team history in the state store (schema 5): rows written with a commit, read back as a
/// `UserHistory`, pruned by day, weekly reports by week.
@Suite struct HistoryStoreTests {
    let dir = TemporaryPath.make("mw-hist")
    var path: String { dir + "/state.sqlite" }

    init() throws { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }

    func day(_ s: String) -> DayNumber { CivilDate(parsing: Substring(s))!.dayNumber }

    func transition(_ id: String, _ status: AlertStatus, day d: String, headline: String, isRepeat: Bool = false) -> AlertTransition {
        AlertTransition(
            id: id, rule: "stalled_recovery", user: "jamie", severity: .warning, status: status, activeSince: Timestamp(seconds: 0),
            firedAt: Timestamp(seconds: 0), resolvedAt: status == .resolved ? Timestamp(seconds: 1) : nil,
            day: CivilDate(parsing: Substring(d))!, headline: headline, labels: [("team", "physio")], evidence: [], annotations: [],
            isRepeat: isRepeat, reason: nil)
    }

    @Test func aRevisedDayReplacesItsValueAndEpisodesFoldTransitions() throws {
        let store = try StateStore(path: path)
        let p1 = SeriesPoint(user: "jamie", name: "speed_p95", day: CivilDate(parsing: "2026-03-02")!, value: 1.2, unit: "m/s")
        let missing = SeriesPoint(user: "jamie", name: "speed_p95", day: CivilDate(parsing: "2026-03-03")!, value: nil, unit: "m/s")
        let injury = TimelineEvent(id: "inj", category: .clinical, kind: "injury", firstDay: day("2026-02-01"), lastDay: day("2026-02-01"))
        _ = try store.commit(
            users: [], outbox: [],
            history: [
                .series(p1), .series(missing), .timeline(user: "jamie", injury),
                .alert(transition("a1", .firing, day: "2026-03-02", headline: "first"))
            ])
        var revised = p1
        revised.value = 1.1
        revised.revised = true
        let moved = TimelineEvent(id: "inj", category: .clinical, kind: "injury", firstDay: day("2026-02-03"), lastDay: day("2026-02-03"), note: "<&>")
        _ = try store.commit(
            users: [], outbox: [],
            history: [
                .series(revised), .timeline(user: "jamie", moved),
                .alert(transition("a1", .firing, day: "2026-03-09", headline: "reminder", isRepeat: true)),
                .alert(transition("a1", .resolved, day: "2026-03-12", headline: "resolved")),
                .alert(transition("a2", .firing, day: "2026-03-20", headline: "again"))
            ])
        let h = try store.history(of: "jamie", from: .min, through: .max)
        #expect(h.series["speed_p95"]?[day("2026-03-02")] == .some(1.1))
        #expect(h.series["speed_p95"]?[day("2026-03-03")] == .some(nil))  // missing is kept as missing, not zero
        #expect(h.series["speed_p95"]?.count == 2)
        #expect(h.units["speed_p95"] == "m/s")
        #expect(h.timeline == [moved])  // re-sent with another date: one entry
        #expect(h.alerts.map(\.id) == ["a1", "a2"])
        #expect(h.alerts[0].firedDay == day("2026-03-02") && h.alerts[0].endedDay == day("2026-03-12") && h.alerts[0].headline == "resolved")
        #expect(h.alerts[1].endedDay == nil && h.alerts[0].labels == ["team": "physio"])

        // A range after a1's resolution leaves it out; series outside the range too.
        let late = try store.history(of: "jamie", from: day("2026-03-13"), through: .max)
        #expect(late.alerts.map(\.id) == ["a2"])
        #expect(late.series["speed_p95"] == nil)
        #expect(try store.history(of: "nobody", from: .min, through: .max) == UserHistory(user: "nobody"))
    }

    /// An expired instance reads back as ended by expiring (not resolved), and a range after its
    /// end leaves it out as it does a resolved one.
    @Test func anExpiredEpisodeReadsBackAsExpired() throws {
        let store = try StateStore(path: path)
        var expired = transition("x1", .expired, day: "2026-04-02", headline: "window ended")
        expired.expiredAt = Timestamp(seconds: 2)
        expired.reason = AlertTransition.windowEnded
        _ = try store.commit(
            users: [], outbox: [],
            history: [.alert(transition("x1", .firing, day: "2026-03-01", headline: "stalled")), .alert(expired)])
        let h = try store.history(of: "jamie", from: .min, through: .max)
        #expect(h.alerts.count == 1)
        #expect(h.alerts[0].expired && h.alerts[0].endedDay == day("2026-04-02") && h.alerts[0].firedHeadline == "stalled")
        #expect(try store.history(of: "jamie", from: day("2026-04-03"), through: .max).alerts.isEmpty)
    }

    /// The series read back (built a series at a time, not point by point) are what recording the
    /// same published points gives: values to SI from their units, missing kept, revisions last,
    /// only the days of the range.
    @Test func readSeriesEqualRecordingThePublishedPoints() throws {
        let store = try StateStore(path: path)
        var rng = SplitMix64(seed: 18)
        var reference = UserHistory(user: "jamie")
        let first = day("2026-01-01")
        for chunk in 0..<6 {
            var points: [SeriesPoint] = []
            for d in (chunk * 10)..<(chunk * 10 + 10) {
                for (name, unit) in [("speed_p95", "m/s"), ("ds_7d", "%"), ("steps", ""), ("walk_6m", "m")] {
                    let value: Double? = rng.next() % 5 == 0 ? nil : Double(rng.next() % 10_000) / 100
                    points.append(SeriesPoint(user: "jamie", name: name, day: CivilDate(dayNumber: first + DayNumber(d)), value: value, unit: unit))
                    points.append(SeriesPoint(user: "kim", name: name, day: CivilDate(dayNumber: first + DayNumber(d)), value: 1, unit: unit))
                }
            }
            if chunk == 3 {  // a revision of an earlier day, in a later commit
                points.append(SeriesPoint(user: "jamie", name: "ds_7d", day: CivilDate(dayNumber: first + 25), value: 12.5, unit: "%", revised: true))
            }
            if chunk % 2 == 1 { points.shuffle(using: &rng) }  // user-days interleaved within a commit
            for p in points where p.user == "jamie" && (20..<50).contains(p.day.dayNumber - first) { reference.record(p) }
            _ = try store.commit(users: [], outbox: [], history: points.map { .series($0) })
        }
        let h = try store.history(of: "jamie", from: first + 20, through: first + 49)
        #expect(h.series == reference.series)
        #expect(h.units == reference.units)
        #expect(h.series["ds_7d"]?[first + 25] == .some(0.125))
        #expect(
            try store.history(of: "kim", from: first, through: first + 59).series.mapValues(\.count) == [
                "speed_p95": 60, "ds_7d": 60, "steps": 60, "walk_6m": 60
            ])
    }

    @Test func weeklyReportsByWeekAndPruning() throws {
        let store = try StateStore(path: path)
        for (w, monday) in [("2026-W09", "2026-02-23"), ("2026-W10", "2026-03-02")] {
            _ = try store.commit(
                users: [], outbox: [],
                history: [HistoryRecord(user: "jamie", kind: .weekly, key: w, day: day(monday), payload: Array("{\"week\":\"\(w)\"}".utf8))])
        }
        let old = SeriesPoint(user: "jamie", name: "s", day: CivilDate(parsing: "2025-01-01")!, value: 1, unit: "m/s")
        let recent = SeriesPoint(user: "jamie", name: "s", day: CivilDate(parsing: "2026-03-01")!, value: 2, unit: "m/s")
        _ = try store.commit(users: [], outbox: [], history: [.series(old), .series(recent)])
        #expect(try store.weeklyReport(of: "jamie")?.week == "2026-W10")
        #expect(try store.weeklyReport(of: "jamie", week: "2026-W09").map { String(decoding: $0.payload, as: UTF8.self) } == "{\"week\":\"2026-W09\"}")
        #expect(try store.weeklyReport(of: "jamie", week: "2026-W11") == nil)
        #expect(try store.reportWeeks(of: "jamie") == ["2026-W10", "2026-W09"])
        #expect(try store.pruneHistory(of: "jamie", keepFrom: day("2026-01-01"), reportsFrom: day("2026-03-01")) == 2)
        #expect(try store.reportWeeks(of: "jamie") == ["2026-W10"])
        #expect(try store.history(of: "jamie", from: .min, through: .max).series["s"]?.keys.sorted() == [day("2026-03-01")])
    }

    /// A packed series row cut short or with an unknown flag is an error naming the day, not a guess.
    @Test(arguments: ["0100", "010001000000", "01000100000002", "0100010000000100"])
    func aSeriesRowTheStoreCannotReadIsAnError(hex: String) throws {
        let store = try StateStore(path: path)
        let p = SeriesPoint(user: "jamie", name: "speed_p95", day: CivilDate(parsing: "2026-03-02")!, value: 1.2, unit: "m/s")
        _ = try store.commit(users: [], outbox: [], history: [.series(p)])
        #expect(try store.history(of: "jamie", from: .min, through: .max).series["speed_p95"]?.count == 1)
        try SQLiteDatabase(path: path).exec("UPDATE history_days SET data = x'\(hex)'")
        #expect(throws: HistoryDecodingError.self) { try store.history(of: "jamie", from: .min, through: .max) }
    }

    @Test func aRowTheStoreCannotReadIsAnErrorNotAGuess() throws {
        let store = try StateStore(path: path)
        _ = try store.commit(
            users: [], outbox: [], history: [HistoryRecord(user: "jamie", kind: .timeline, key: "x", day: 1, payload: Array("{\"id\":1}".utf8))])
        #expect(throws: HistoryDecodingError.self) { try store.history(of: "jamie", from: .min, through: .max) }
    }

    @Test func packedSeriesRowsRoundTripAndRefuseTruncation() throws {
        var d = SeriesDay()
        d.set(3, 1.25)
        d.set(70_000, nil)
        d.set(3, -0.5)  // a revision replaces
        let bytes = d.bytes
        #expect(SeriesDay(validating: bytes)?.points.map(\.id) == [3, 70_000])
        #expect(SeriesDay(validating: bytes)?.points.map(\.value) == [-0.5, nil])
        for cut in 0..<bytes.count { #expect(SeriesDay(validating: Array(bytes.prefix(cut))) == nil, "cut at \(cut)") }
        #expect(SeriesDay(validating: bytes + [0]) == nil)
        // The layout: a u16 count, then each point's u32 id, a flag and, with a value, its 8 bytes.
        let bits = (-0.5).bitPattern
        #expect(bytes == [2, 0, 3, 0, 0, 0, 1] + (0..<8).map { UInt8(truncatingIfNeeded: bits >> (8 * $0)) } + [0x70, 0x11, 0x01, 0x00, 0])
        bytes.withUnsafeBytes { raw in #expect(SeriesDay(trusted: raw).bytes == bytes) }
        #expect([UInt8]([0xff]).withUnsafeBytes { SeriesDay(trusted: $0).points.isEmpty })  // malformed: an empty row, as init(_:)
    }
}
