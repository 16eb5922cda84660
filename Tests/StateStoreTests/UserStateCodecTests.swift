import MobilityModel
import RuleLanguage
import Testing

@testable import RuleEngine
@testable import StateStore

/// The blob format changed (v1: every day raw with string ids; v2: open days raw with hashed ids,
/// folded days as input values). A store written by the first release must still load.
@Suite struct UserStateCodecTests {
    /// Writes a blob the way the first release did.
    static func v1Blob() -> [UInt8] {
        var w = UserStateCodec.Writer()
        w.str("Europe/Zurich"); w.u8(1); w.optI32(20_500); w.optI32(20_501)
        w.i32(2)  // buckets
        w.u8(MetricKind.walkingSpeed.rawValue); w.i32(20_500); w.i32(2)
        w.str("a"); w.f64(1.1); w.i64(1_000); w.u8(Provenance.device.rawValue)
        w.str("b"); w.f64(1.3); w.i64(2_000); w.u8(Provenance.userEntered.rawValue)
        w.u8(MetricKind.walkingSpeed.rawValue); w.i32(20_501); w.i32(1)
        w.str("c"); w.f64(0.9); w.i64(3_000); w.u8(Provenance.device.rawValue)
        w.i32(1); w.str("sync-1"); w.i64(3); w.str("c")  // sync index
        w.i32(1); w.str("i"); w.u8(EventCategory.clinical.rawValue); w.str("injury"); w.i32(20_500); w.i32(20_500); w.str("")
        w.i32(1); w.str("slow"); w.u8(1); w.i64(77); w.i64(.min); w.i64(5)  // alert: pending since 77
        w.i32(1); w.i32(20_500)  // revised days
        return w.bytes
    }

    @Test func readsFirstReleaseBlobs() throws {
        let s = try UserStateCodec.decode(user: "u", UserStateCodecTests.v1Blob()).restored
        #expect(s.calendar.identifier == "Europe/Zurich" && s.hasProfile && s.firstDay == 20_500 && s.lastClosedDay == 20_501)
        #expect(s.openDays.map(\.day) == [20_500, 20_501])
        #expect(s.openDayValues[0].map(\.id) == [SampleID("a"), SampleID("b")])
        #expect(s.openDayValues[0].map(\.value) == [1.1, 1.3] && s.openDayValues[0][1].provenance == .userEntered)
        #expect(s.syncIndex == [SyncEntry(sync: SampleID("sync-1"), version: 3, id: SampleID("c"))])
        #expect(s.events["i"]?.kind == "injury" && s.boundaries == [20_500])
        #expect(s.alerts["slow"]?.state == .pending(activeSince: 77))
        #expect(s.revisedDays == [20_500])
        // and it is written back in the current format, unchanged
        let again = try UserStateCodec.decode(user: "u", UserStateCodec.encode(s.whole)).restored
        #expect(again.openDayValues == s.openDayValues && again.syncIndex == s.syncIndex && again.alerts == s.alerts)
    }

    /// A profile's care teams come back; a state without teams is the bytes it was before teams
    /// were kept (profile flag 1), and an unknown flag is refused.
    @Test func careTeamsRoundTripAndOldBytesStay() throws {
        var st = UserState(user: "u", calendar: LocalCalendar.cached("Europe/Zurich")!)
        st.hasProfile = true
        let plain = UserStateCodec.encode(st.whole)
        #expect(plain[4 + 4 + "Europe/Zurich".utf8.count] == 1)
        st.careTeams = ["ward-a", "physio-north"]
        let withTeams = UserStateCodec.encode(st.whole)
        #expect(withTeams[4 + 4 + "Europe/Zurich".utf8.count] == 2)
        let r = try UserStateCodec.decode(user: "u", withTeams).restored
        #expect(r.careTeams == ["ward-a", "physio-north"] && r.hasProfile && r.calendar.identifier == "Europe/Zurich")
        #expect(try UserStateCodec.decode(user: "u", plain).restored.careTeams.isEmpty)
        var bad = plain
        bad[4 + 4 + "Europe/Zurich".utf8.count] = 3
        #expect(throws: (any Error).self) { try UserStateCodec.decode(user: "u", bad) }
    }

    /// The alert log is an optional section too: a state restored from a store without it starts
    /// the log after its last closed day (no revision re-evaluates the days before), and the log
    /// with its start round-trips, rule names read as the rules' own strings.
    @Test func theAlertLogRoundTripsAndAnOldStateStartsItAfterItsLastDay() throws {
        let old = try UserStateCodec.decode(user: "u", UserStateCodecTests.v1Blob())
        #expect(old.alertLogStart == nil && old.alertLog.isEmpty)
        var st = old.restored
        let last = try #require(st.lastClosedDay)
        #expect(st.alertLogStart == last + 1)
        st.alertNames = ["slow"]
        st.alertStates = [AlertStateMachine()]
        st.alertLog = [
            AlertLogEntry(day: last, rule: 0, before: AlertStateMachine(state: .pending(activeSince: 5), quietUntil: .min, lastEvaluated: 4))
        ]
        st.alertLogStart = last - 3
        let bytes = UserStateCodec.encode(st.whole, withOpenDays: false)
        let back = try UserStateCodec.decode(user: "u", bytes, alertNames: ["slow"])
        #expect(back.alertLogStart == last - 3 && back.alertLog == st.whole.alertLog)
        #expect(throws: (any Error).self) { try UserStateCodec.decode(user: "u", Array(bytes.dropLast(2))) }
    }

    /// Tombstones (deleted ids remembered for the lateness) are an optional section
    /// after the tail: a state without them is the bytes it was before they were kept, and a
    /// store written before them reads as a state without any.
    @Test func tombstonesRoundTripAndOldBytesStay() throws {
        let v1Read = try UserStateCodec.decode(user: "u", UserStateCodecTests.v1Blob())
        var st = v1Read.restored
        st.alertLogStart = .min  // no alert log either (a state restored without one starts it after its last day)
        let plain = UserStateCodec.encode(st.whole, withOpenDays: false)
        st.tombstones = [Tombstone(id: SampleID("gone"), day: 20_501), Tombstone(id: SampleID("early"), day: Tombstone.unstamped)]
        let with = UserStateCodec.encode(st.whole, withOpenDays: false)
        #expect(Array(with.prefix(plain.count)) == plain)  // the old bytes, then the section
        #expect(with.count == plain.count + 1 + 4 + 2 * 12 && with[plain.count] == 1)
        let r = try UserStateCodec.decode(user: "u", with).restored
        #expect(r.tombstones == st.tombstones && r.syncIndex == st.syncIndex && r.alerts == st.alerts && r.revisedDays == st.revisedDays)
        #expect(try UserStateCodec.decode(user: "u", plain).tombstones.isEmpty)
        // In the v2 form (open days in the blob) too.
        #expect(try UserStateCodec.decode(user: "u", UserStateCodec.encode(st.whole)).tombstones == st.tombstones)
        // Strict: an unknown section, a section twice, a truncated one.
        #expect(throws: (any Error).self) { try UserStateCodec.decode(user: "u", plain + [9]) }
        #expect(throws: (any Error).self) { try UserStateCodec.decode(user: "u", with + Array(with[plain.count...])) }
        #expect(throws: (any Error).self) { try UserStateCodec.decode(user: "u", Array(with.dropLast(3))) }
    }

    @Test func foldedHistoryRoundTrips() throws {
        let p = try #require(
            Checker.check(
                text: """
                    series s = p95(walkingSpeed)
                    series n = count(walkingSpeed, source: device)
                    alert slow { when mean(s, 3 d) < 1 m/s
                      for 1 d }
                    """
            ).program)
        var e = Engine(program: p)
        var out: [EngineOutput] = []
        for d in 0..<40 {
            let t = LocalCalendar.utc.startOfDay(DayNumber(20_500 + d)).adding(seconds: 36_000)
            for j in 0..<3 {
                e.ingest(Sample(id: "s\(d)-\(j)", metric: .walkingSpeed, value: 0.8 + Double(j) * 0.1, start: t, end: t), user: "u", now: t, into: &out)
            }
            e.advance(user: "u", to: t, into: &out)
        }
        let st = try #require(e.state(of: "u"))
        #expect(!st.foldedRuns.isEmpty && st.openDays.count <= 11 && st.lastFoldedDay! < st.openDays.first!.day)
        #expect(st.foldedInputs == p.inputs)
        let r = try UserStateCodec.decode(user: "u", UserStateCodec.encode(st.whole)).restored
        #expect(r.foldedDayList == st.foldedDayList && r.foldedInputs == st.foldedInputs)
        #expect(r.openDayValues == st.openDayValues)
    }

    /// The store reads alert states as written (aligning them with the rules is the engine's
    /// restore, see UserSnapshotTests); a rule name equal to one of the rules' is that instance.
    @Test func alertStatesComeBackAsWrittenSharingTheRulesNames() throws {
        var st = UserState(user: "u", calendar: .utc)
        let firing = AlertStateMachine(state: .firing(activeSince: 1, firedAt: 2, lastTrue: 3, lastSent: 4), quietUntil: 5, lastEvaluated: 6)
        let pending = AlertStateMachine(state: .pending(activeSince: 7), quietUntil: .min, lastEvaluated: 8)
        st.alerts = ["stalled_recovery_long_name": firing, "gone": pending, "quiet": AlertStateMachine()]
        let bytes = UserStateCodec.encode(st.whole)
        let rules = ["new_rule", "stalled_recovery_long_name", "quiet"]
        let r = try UserStateCodec.decode(user: "u", bytes, alertNames: rules)
        #expect(r.alerts == [.init(rule: "gone", machine: pending), .init(rule: "stalled_recovery_long_name", machine: firing)])
        var read = r.alerts[1].rule, rule = rules[1]
        #expect(read.withUTF8 { $0.baseAddress } == rule.withUTF8 { $0.baseAddress })
        // Without the rules' names every stored state comes back under its own name.
        let plain = try UserStateCodec.decode(user: "u", bytes)
        #expect(plain.restored.alerts == ["stalled_recovery_long_name": firing, "gone": pending])
    }

    /// A chunk row is its count and each value's id, value and end (8 bytes each, little endian),
    /// metric and provenance: the layout the store has always written (the encoder now stores
    /// the bytes in place).
    @Test func aChunkRowIsItsValuesLaidOutInOrder() throws {
        func le<T: FixedWidthInteger>(_ v: T) -> [UInt8] { withUnsafeBytes(of: v.littleEndian) { Array($0) } }
        var values: [StoredValue] = []
        for i in 0..<70 {
            let id = SampleID(rawValue: 0x0102_0304_0506_0700 &+ UInt64(i))
            let metric: MetricKind = i % 2 == 0 ? .walkingSpeed : .walkingDoubleSupportPercentage
            let value: Double = i == 3 ? -0.0 : 1.5 + Double(i)
            let end = Timestamp(milliseconds: Int64(1_000 * i - 5))
            let provenance: Provenance = i % 3 == 0 ? .userEntered : .device
            values.append(StoredValue(id: id, metric: metric, value: value, end: end, provenance: provenance))
        }
        let chunks: [(chunk: Int, range: Range<Int>)] = [(0, 0..<64), (1, 64..<70)]
        for (chunk, range) in chunks {
            var expected: [UInt8] = le(Int32(range.count))
            for v in values[range] {
                expected += le(v.id.rawValue)
                expected += le(v.value.bitPattern)
                expected += le(v.end.milliseconds)
                expected += [v.metric.rawValue, v.provenance.rawValue]
            }
            let bytes = UserStateCodec.encode(day: values[...], chunk: chunk)
            #expect(bytes == expected, "chunk \(chunk)")
            var back: [StoredValue] = []
            try UserStateCodec.decodeChunk(bytes, user: "u", into: &back)
            #expect(back == Array(values[range]))
        }
        #expect(UserStateCodec.encode(day: values[64...], chunk: 0).count == 4 + 6 * UserStateCodec.valueBytes)  // a slice of a day
    }
}
