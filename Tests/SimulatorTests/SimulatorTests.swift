import CZlib
import Foundation
import Ingest
import MobilityModel
import MobilityWire
import RuleEngine
import RuleLanguage
import Simulator
import TestSupport
import Testing

@Suite struct ScenarioTests {
    @Test func parsesEveryShippedScenario() throws {
        let dir = RepoPaths.root + "/simulator/scenarios"
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".scenario") }
        #expect(files.count >= 9)
        for f in files {
            let s = try Scenario.load(dir + "/" + f)
            #expect(!s.expectations.isEmpty, "\(f) has no expectations")
        }
    }

    @Test(arguments: [
        ("walking_speed 1.3 %", 1, "not a unit of speed"),
        ("user bad user", 1, "user id"),
        ("injury day", 1, "whole number"),
        ("injury day 30 entered 35", 1, "injury day N entered day M"),
        ("injury day 30 entered day 25", 1, "cannot be entered before it happens"),
        ("days 90\nfrobnicate 3", 2, "unknown statement 'frobnicate'"),
        ("expect stalled_recovery fires day 3", 1, "expect RULE"),
        ("missing day 9 to 3", 1, "ends before it starts"),
        ("time_zone Mars/Base", 1, "IANA")
    ])
    func reportsErrorsWithLines(text: String, line: Int, message: String) {
        #expect(throws: ScenarioError.self) { try Scenario.parse(path: "x.scenario", text: text) }
        do { _ = try Scenario.parse(path: "x.scenario", text: text) } catch {
            #expect(error.line == line && error.description.contains(message), "\(error)")
        }
    }

    @Test func generationIsDeterministicForASeed() throws {
        let s = try Scenario.load(RepoPaths.root + "/simulator/scenarios/jamie-plateau.scenario")
        let a = s.generator.generate().map(\.record.line), b = s.generator.generate().map(\.record.line)
        #expect(a == b)
        var other = s
        other.seed += 1
        #expect(other.generator.generate().map(\.record.line) != a)
        // Shapes: no samples at night, mixed units and type spellings, every payload decodes.
        let decoder = WireDecoder()
        var units = Set<String>(), types = Set<String>()
        for r in s.generator.generate() where r.record.topic.hasSuffix("/samples") {
            let items = try decoder.samples(r.record.payload, user: s.persona.user).get()
            for item in items {
                let sample = try item.get()
                let hour = (sample.end.seconds + Int64(sample.utcOffset)) % 86_400 / 3600
                #expect((7...20).contains(hour))
            }
            let v = try JSONValue.parse(r.record.payload).get()
            if case .array(let a) = v {
                for x in a { if case .string(let u)? = x["unit"] { units.insert(u) }; if case .string(let t)? = x["type"] { types.insert(t) } }
            }
        }
        #expect(units.isSuperset(of: ["m/s", "mi/hr", "%", "in", "m"]))
        #expect(types.contains("HKQuantityTypeIdentifierWalkingSpeed") && types.contains("walkingDoubleSupportPercentage"))
    }

    @Test func shippedScenariosPassInProcess() throws {
        let dir = RepoPaths.root + "/simulator/scenarios"
        let scenarios = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".scenario") }.sorted().map {
            try Scenario.load(dir + "/" + $0)
        }
        let program = try #require(Checker.check(RuleSet.load([RepoPaths.rules]).sources).program)
        let results = ScenarioVerifier(scenarios: scenarios).verify(ScenarioVerifier.replay(ScenarioVerifier.traffic(scenarios), program: program))
        #expect(results.allSatisfy { $0.passed }, "\(ScenarioVerifier.report(results))")
    }

    @Test func verifierReportsMissingAndUnexpectedAlerts() throws {
        var s = try Scenario.parse(path: "t.scenario", text: "user t\nexpect data_gap firing day 5\nexpect no stalled_recovery\n")
        s.timeline.days = 10
        let t = AlertTransition(
            id: "x", rule: "stalled_recovery", user: "t", severity: .warning, status: .firing, activeSince: Timestamp(seconds: 0),
            firedAt: Timestamp(seconds: 0), resolvedAt: nil, day: CivilDate(year: 2026, month: 1, day: 3), headline: "", labels: [],
            evidence: [], annotations: [])
        let r = ScenarioVerifier(scenarios: [s]).verify([t])
        #expect(!r[0].passed)
        let report = ScenarioVerifier.report(r)
        #expect(report.contains("FAIL  data_gap firing day 5: got no data_gap transitions"))
        #expect(report.contains("FAIL  no stalled_recovery: got stalled_recovery firing day 3 (2026-01-03)"))
        #expect(report.hasSuffix("0 passed, 1 failed\n"))
    }
}

@Suite struct HealthExportTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/export.xml").path
    static let rules = """
        series n = count(walkingSpeed)
        series top = max(walkingSpeed)
        series p = p95(walkingSpeed, source: device)
        series clinic = max(sixMinuteWalkTestDistance, source: user_entered)
        series watch = max(sixMinuteWalkTestDistance, source: device)
        alert provisional {
          on sample sixMinuteWalkTestDistance where device_recorded
          when calibrated == false
        }
        """

    func run(_ path: String) throws -> (HealthExport.Report, [String: [String: Double?]], [AlertTransition]) {
        let export = try HealthExport(path: path, user: "jamie", defaultTimeZone: "America/Los_Angeles")
        let (records, report) = try export.traffic()
        let program = try #require(Checker.check(text: Self.rules).program)
        var ing = Ingestor(engine: Engine(program: program), clock: .event)
        var out: [EngineOutput] = []
        for r in records { ing.handle(topic: r.topic, payload: r.payload, now: Timestamp(seconds: 0), into: &out) }
        #expect(ing.counters.rejected.isEmpty, "\(ing.counters.rejected)")
        var series: [String: [String: Double?]] = [:]
        var alerts: [AlertTransition] = []
        for o in out {
            if case .series(let s) = o { series[s.name, default: [:]][s.day.description] = s.value }
            if case .alert(let a) = o { alerts.append(a) }
        }
        return (report, series, alerts)
    }

    @Test func parsesTheExportIntoTheRightDays() throws {
        let (report, series, alerts) = try run(Self.fixture)
        #expect(report.records == 14)
        #expect(report.mobility == 11)  // 7 valid walking-speed records, double support, two 6MWD, VO2Max
        #expect(report.malformed.count == 2)  // value "fast", and a record without a value
        // 13 March (PST): 2.5, 3.0 and 2.0 mi/hr, the 23:30 one included; p95 (R-7) = 2.95 mi/hr.
        #expect(series["n"]?["2021-03-13"] == 3)
        #expect(abs((series["p"]?["2021-03-13"] ?? 0)! - 2.95 * 0.44704) < 1e-6)
        // 14 March, the 23-hour DST day: 01:30 -0800, 10:00 -0700 (4.5 km/h = 1.25 m/s), 23:30 -0700.
        #expect(series["n"]?["2021-03-14"] == 3)
        #expect(abs((series["top"]?["2021-03-14"] ?? 0)! - 1.25) < 1e-9)
        // 15 March: no walking; the watch's capped, uncalibrated estimate and the clinic's test.
        #expect(series["n"]?["2021-03-15"] == .some(nil))
        #expect(series["watch"]?["2021-03-15"] == 500)
        #expect(series["clinic"]?["2021-03-15"] == 410)
        #expect(alerts.map { "\($0.rule) \($0.status.rawValue) \($0.day)" } == ["provisional firing 2021-03-15"])
    }

    @Test func readsTheSameExportFromADeflatedZip() throws {
        let xml = try Array(Data(contentsOf: URL(fileURLWithPath: Self.fixture)))
        let zip = TemporaryPath.make("mw-export", suffix: ".zip")
        try Data(makeZip(name: "apple_health_export/export.xml", contents: xml)).write(to: URL(fileURLWithPath: zip))
        defer { try? FileManager.default.removeItem(atPath: zip) }
        let fromZip = try run(zip), fromXML = try run(Self.fixture)
        #expect(fromZip.0.mobility == fromXML.0.mobility)
        #expect(fromZip.1 == fromXML.1)
    }

    @Test func notWellFormedXMLIsAnError() throws {
        let path = TemporaryPath.make("mw-bad", suffix: ".xml")
        try "<HealthData><Record type=\"HKQuantityTypeIdentifierWalkingSpeed\"".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: ExportError.self) { _ = try HealthExport(path: path, user: "u").traffic() }
    }

    /// A one-entry zip with a raw-deflated entry, a central directory and an end record.
    func makeZip(name: String, contents: [UInt8]) -> [UInt8] {
        var s = z_stream()
        _ = mw_deflate_init_raw(&s)
        var out = [UInt8](repeating: 0, count: contents.count + 1024)
        var input = contents
        let produced: Int = input.withUnsafeMutableBufferPointer { inp in
            out.withUnsafeMutableBufferPointer { o in
                s.next_in = inp.baseAddress
                s.avail_in = UInt32(inp.count)
                s.next_out = o.baseAddress
                s.avail_out = UInt32(o.count)
                _ = deflate(&s, Z_FINISH)
                return o.count - Int(s.avail_out)
            }
        }
        deflateEnd(&s)
        let data = Array(out[0..<produced])
        let crc = UInt32(contents.withUnsafeBufferPointer { crc32(0, $0.baseAddress, UInt32($0.count)) })
        func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xff), UInt8(v >> 8 & 0xff)] }
        func le32(_ v: UInt32) -> [UInt8] { [UInt8(v & 0xff), UInt8(v >> 8 & 0xff), UInt8(v >> 16 & 0xff), UInt8(v >> 24 & 0xff)] }
        let n = Array(name.utf8)
        var zip: [UInt8] =
            [0x50, 0x4b, 3, 4] + le16(20) + le16(0) + le16(8) + le16(0) + le16(0) + le32(crc) + le32(UInt32(data.count))
            + le32(UInt32(contents.count)) + le16(n.count) + le16(0) + n + data
        let cd = zip.count
        zip +=
            [0x50, 0x4b, 1, 2] + le16(20) + le16(20) + le16(0) + le16(8) + le16(0) + le16(0) + le32(crc) + le32(UInt32(data.count))
            + le32(UInt32(contents.count)) + le16(n.count) + le16(0) + le16(0) + le16(0) + le16(0) + le32(0) + le32(0) + n
        let cdSize = zip.count - cd
        zip += [0x50, 0x4b, 5, 6] + le16(0) + le16(0) + le16(1) + le16(1) + le32(UInt32(cdSize)) + le32(UInt32(cd)) + le16(0)
        return zip
    }
}

@Suite struct PopulationTests {
    @Test func streamsDayByDayWithLabels() throws {
        let pop = Population(users: 40, days: 30, seed: 3)
        let labels = pop.labels()
        #expect(labels.count == 40)
        #expect(Set(labels.map(\.pattern)).count >= 4)
        var perUserLast: [String: Int] = [:]
        var count = 0
        let decoder = WireDecoder()
        for (i, r) in pop.traffic().enumerated() {
            count += 1
            guard r.topic.hasSuffix("/samples") else { continue }
            let user = r.topic.split(separator: "/")[3]
            perUserLast[String(user)] = i
            #expect((try? decoder.samples(r.payload, user: String(user)).get())?.allSatisfy { (try? $0.get()) != nil } == true)
        }
        #expect(count > 40 * 30 * 5)
        #expect(perUserLast.count == 40)
        // Same seed, same traffic.
        #expect(Array(pop.traffic().prefix(200)).map(\.line) == Array(Population(users: 40, days: 30, seed: 3).traffic().prefix(200)).map(\.line))
    }
}

@Suite struct RetentionTests {
    func run(_ records: [TrafficRecord], program: Program, retention: Bool) -> ([String], Engine) {
        var c = EngineConfiguration()
        c.retention = retention
        var ing = Ingestor(engine: Engine(program: program, configuration: c), clock: .event)
        var out: [EngineOutput] = []
        for r in records { ing.handle(topic: r.topic, payload: r.payload, now: Timestamp(seconds: 0), into: &out) }
        let lines = out.map { o -> String in
            switch o {
            case .alert(let a): a.json
            case .series(let s): s.json
            case .rejected(_, _, let r): r.description
            }
        }
        return (lines, ing.engine)
    }

    @Test func compactionChangesNothingAndBoundsHistory() throws {
        let program = try #require(Checker.check(RuleSet.load([RepoPaths.rules]).sources).program)
        #expect(program.anchoredWindowDays >= 30)
        // Long histories: a cohort over 200 days (injuries around day 31-40 and their baselines).
        let records = Array(Population(users: 12, days: 200, seed: 21).traffic())
        let (kept, compacted) = run(records, program: program, retention: true)
        let (all, full) = run(records, program: program, retention: false)
        #expect(kept == all)  // every alert, series point and rejection identical
        #expect(kept.count > 1000)
        for st in compacted.allStates {
            let u = st.user
            let days = Set(st.foldedDayList.map(\.day) + st.openDays.map(\.day))
            let f = full.state(of: u)!
            let fullDays = Set(f.foldedDayList.map(\.day) + f.openDays.map(\.day))
            #expect(days.count < fullDays.count, "\(u): nothing was compacted")
            // recent: look-back + the 14 d a revision re-evaluates (more than 7 d lateness + 2 d
            // margin) + the closed day + the open day; anchored: the 2a + 2 days around the latest injury
            let reach = max(7 + 2, EngineConfiguration().revisionDays)
            #expect(days.count <= (program.lookbackDays + reach + 1 + 1) + (2 * program.anchoredWindowDays + 2), "\(u) keeps \(days.count) days")
            // raw values only for days still open to late data (7 d lateness + 2 d margin + today)
            #expect(st.openDays.count <= 7 + 2 + 2, "\(u) keeps \(st.openDays.count) open days")
            // The folded table: a row per day of its runs, a column per input with a folded value.
            #expect(st.foldedCells.count == st.foldedRuns.reduce(0) { $0 + Int($1.count) } * st.foldedLayout.stride)
            #expect(st.foldedColumns == st.foldedDayList.reduce(0) { $0 | $1.mask }, "\(u): a column without values")
        }
    }
}
