import CareReports
import Foundation
import Ingest
import MobilityModel
import MobilityWire
import RuleEngine
import RuleLanguage
import Simulator
import StateStore

/// `mobility-bench`: measures the pieces of the hot path. Build with `swift build -c release`.
/// Each figure is the median of `--runs` runs. `--smoke` uses tiny sizes (CI checks it works).
let usage = """
    usage: mobility-bench [--smoke] [--runs N] [--users N] [--days N] [--rules DIR] [only: decode|engine|dayclose|memory|restart|history|reports ...]
           mobility-bench e2e --broker URL --metrics-port PORT [--messages N] [--batch N] [--runs N] [--latency on|off] [--traffic FILE] [--scratch DIR] [--cpu NAME=PID ...]   (see scripts/bench-e2e.sh)
           mobility-bench store-commits --postgres URL [--users N] [--batches N] [--rules DIR]   (see scripts/bench-postgres.sh)
    """

/// A usage error: `mobility-bench[ COMMAND]: MESSAGE` on stderr (then the usage, for an unknown
/// option), exit 2.
func usageError(_ command: String? = nil, _ message: String, withUsage: Bool = false) -> Never {
    let text = "mobility-bench\(command.map { " " + $0 } ?? ""): \(message)\n" + (withUsage ? "\n" + usage : "")
    FileHandle.standardError.write(Data(text.utf8))
    exit(2)
}

/// The options of a subcommand, `--flag value` each: `-h`/`--help` prints the usage (exit 0); a flag
/// not in `known`, or without its value, is a usage error.
func subcommandOptions(_ name: String, _ args: ArraySlice<String>, known: Set<String>, take: (_ flag: String, _ value: String) -> Void) {
    var j = args.startIndex
    while j < args.endIndex {
        let flag = args[j]
        if flag == "-h" || flag == "--help" {
            print(usage)
            exit(0)
        }
        guard known.contains(flag) else { usageError(name, "unknown option '\(flag)'", withUsage: true) }
        guard j + 1 < args.endIndex else { usageError(name, "\(flag) needs a value") }
        take(flag, args[j + 1])
        j += 2
    }
}

/// A whole number for `flag`, or a usage error.
func number(_ flag: String, _ text: String) -> Int {
    guard let n = Int(text), n >= 0 else { usageError(nil, "\(flag) takes a whole number, not '\(text)'") }
    return n
}

var args = Array(CommandLine.arguments.dropFirst())
if args.first == "e2e" {
    var broker = "mqtt://127.0.0.1:1883", port = 9464, messages = 50_000, batch = 1, e2eRuns = 3, latency = true
    var traffic: String?
    var scratch = NSTemporaryDirectory()  // the journal-only subscriber's journal (bench-e2e.sh passes its work directory, beside the daemon's --state)
    var watched: [(name: String, pid: Int32)] = []  // processes whose CPU a message each round prints (besides the harness's own)
    let e2eFlags: Set = ["--broker", "--metrics-port", "--messages", "--batch", "--runs", "--latency", "--traffic", "--scratch", "--cpu"]
    subcommandOptions("e2e", args.dropFirst(), known: e2eFlags) { flag, value in
        switch flag {
        case "--broker": broker = value
        case "--metrics-port": port = number(flag, value)
        case "--messages": messages = number(flag, value)
        case "--batch": batch = number(flag, value)
        case "--runs": e2eRuns = max(1, number(flag, value))
        case "--latency": latency = value != "off"
        case "--traffic": traffic = value
        case "--scratch": scratch = value
        case "--cpu":
            let parts = value.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, !parts[0].isEmpty, let pid = Int32(parts[1]), pid > 0 else {
                usageError("e2e", "--cpu wants NAME=PID, got '\(value)'")
            }
            watched.append((String(parts[0]), pid))
        default: break
        }
    }
    if let traffic {
        do { try EndToEnd.runTraffic(broker: broker, metricsPort: port, path: traffic, runs: e2eRuns, scratch: scratch, watched: watched) } catch {
            print("e2e failed: \(error)"); exit(1)
        }
        exit(0)
    }
    do {
        try EndToEnd.run(
            broker: broker, metricsPort: port, messages: messages, batch: batch, runs: e2eRuns, latency: latency, scratch: scratch, watched: watched)
    } catch {
        print("e2e failed: \(error)"); exit(1)
    }
    exit(0)
}
if args.first == "store-commits" {
    var url: String?, storeUsers = 2000, batches = 200, storeRules = "rules"
    subcommandOptions("store-commits", args.dropFirst(), known: ["--postgres", "--users", "--batches", "--rules"]) { flag, value in
        switch flag {
        case "--postgres": url = value
        case "--users": storeUsers = number(flag, value)
        case "--batches": batches = max(2, number(flag, value))
        case "--rules": storeRules = value
        default: break
        }
    }
    guard url != nil else { usageError("store-commits", "--postgres URL is required") }
    guard let url, let p = Checker.check(RuleSet.load([storeRules]).sources).program else { FileHandle.standardError.write(Data(usage.utf8)); exit(2) }
    do { try StoreCommits.run(postgres: url, program: p, users: storeUsers, batches: batches) } catch {
        print("store-commits failed: \(error)"); exit(1)
    }
    exit(0)
}
var smoke = false, runs = 5, users = 10_000, days = 30, rules = "rules"
/// The in-process benchmarks that can be named (`only`).
let benchmarks = ["decode", "engine", "dayclose", "memory", "restart", "history", "reports"]
var only: Set<String> = []
var i = 0
while i < args.count {
    let a = args[i]
    func value() -> String { i += 1; guard i < args.count else { usageError(nil, "\(a) needs a value") }; return args[i] }
    switch a {
    case "--smoke": smoke = true
    case "--runs": runs = number(a, value())
    case "--users": users = number(a, value())
    case "--days": days = number(a, value())
    case "--rules": rules = value()
    case "-h", "--help": print(usage); exit(0)
    default:
        if a.hasPrefix("-") { usageError(nil, "unknown option '\(a)'", withUsage: true) }
        guard benchmarks.contains(a) else { usageError(nil, "unknown benchmark '\(a)'; expected \(benchmarks.joined(separator: ", ")), e2e or store-commits") }
        only.insert(a)
    }
    i += 1
}
if smoke { runs = 1; users = 20; days = 10 }
@MainActor func wanted(_ n: String) -> Bool { only.isEmpty || only.contains(n) }

// A missing rules directory must not quietly benchmark an empty pack (run from elsewhere
// than the repository's root, pass --rules).
let ruleFiles = RuleSet.load([rules])
if !ruleFiles.errors.isEmpty {
    FileHandle.standardError.write(Data(("mobility-bench: " + ruleFiles.errors.joined(separator: "\nmobility-bench: ") + "\n").utf8))
    exit(1)
}
guard let program = Checker.check(ruleFiles.sources).program else {
    FileHandle.standardError.write(Data("mobility-bench: rules in \(rules) do not check\n".utf8))
    exit(1)
}

func median(_ xs: [Double]) -> Double { let s = xs.sorted(); return s[s.count / 2] }
func seconds(_ body: () -> Void) -> Double {
    let t = DispatchTime.now().uptimeNanoseconds
    body()
    return Double(DispatchTime.now().uptimeNanoseconds - t) / 1e9
}
func residentBytes() -> Int {
    guard let s = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8), let pages = Int(s.split(separator: " ")[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}
func report(_ name: String, _ value: Double, _ unit: String, _ note: String = "") {
    let v = value >= 100 ? String(format: "%.0f", value) : String(format: "%.3g", value)
    print(
        "\(name.padding(toLength: 34, withPad: " ", startingAt: 0)) \(v.padding(toLength: 12, withPad: " ", startingAt: 0)) \(unit)\(note.isEmpty ? "" : "  (\(note))")"
    )
}

print("mobility-bench: runs \(runs), users \(users), days \(days), \(ProcessInfo.processInfo.activeProcessorCount) cores\(smoke ? ", smoke" : "")")
print(
    "rules: \(program.alerts.count) alerts, \(program.series.count) series, \(program.inputs.count) daily inputs, look-back \(program.lookbackDays) d, anchored windows \(program.anchoredWindowDays) d"
)

/// Realistic payloads from the simulator (one sample per message, and batches of 50).
let cohort = Population(users: max(users / 10, 2), days: min(days, 10), seed: 1)
var singles: [(String, [UInt8])] = []
var samplesJSON: [(String, String)] = []
for r in cohort.traffic() where r.topic.hasSuffix("/samples") {
    let user = String(r.topic.split(separator: "/")[3])
    if case .success(.array(let items)) = JSONValue.parse(r.payload) {
        for it in items { samplesJSON.append((user, it.text)); singles.append((user, Array(it.text.utf8))) }
    }
    if singles.count >= (smoke ? 2_000 : 200_000) { break }
}
var batches: [(String, [UInt8])] = []
var byUser: [String: [String]] = [:]
for (u, j) in samplesJSON { byUser[u, default: []].append(j) }
for (u, list) in byUser.sorted(by: { $0.key < $1.key }) {
    var k = 0
    while k + 50 <= list.count {
        batches.append((u, Array(("[" + list[k..<(k + 50)].joined(separator: ",") + "]").utf8)))
        k += 50
    }
}
let decoder = WireDecoder()

// First: resident memory is measured as growth of the process, which only means something
// before other benchmarks have allocated and freed (malloc reuses freed memory).
if wanted("dayclose") || wanted("memory") || wanted("restart") {
    // Every user with `days` days of history (10 speed samples/day): then one more day closes.
    let base = residentBytes()
    var engine = Engine(
        program: program,
        configuration: {
            var c = EngineConfiguration(); c.publishSeries = false; return c
        }())
    var out: [EngineOutput] = []
    let day0 = CivilDate(year: 2026, month: 1, day: 1).dayNumber
    // Day by day, as the data arrives in production: each user's day is ingested, then closed.
    let ids = (0..<users).map { "u\($0)" }
    for d in 0..<days {
        for (u, id) in ids.enumerated() {
            for j in 0..<10 {
                let t = Timestamp(seconds: Int64(day0 + Int32(d)) * 86_400 + Int64(8 * 3600 + j * 3000))
                engine.ingest(
                    Sample(id: "\(id)-\(d)-\(j)", metric: .walkingSpeed, value: 1.0 + Double((u + d + j) % 7) * 0.05, start: t, end: t),
                    user: id, now: t, into: &out)
            }
            engine.advance(user: id, to: Timestamp(seconds: Int64(day0 + Int32(d)) * 86_400 + 9 * 3600), into: &out)
            out.removeAll(keepingCapacity: true)
        }
    }
    let used = residentBytes() - base
    if wanted("memory") {
        report("memory per user", Double(used) / Double(users), "bytes", "\(days) days × 10 samples, \(users) users, resident")
        // Where it goes: the states' own accounting, averaged over the users.
        var parts: [String: Int] = [:], names: [String] = []
        for st in engine.allStates { for (k, v) in st.heapFootprint { if parts[k] == nil { names.append(k) }; parts[k, default: 0] += v } }
        for k in names { report("  of which \(k)", Double(parts[k]!) / Double(users), "bytes", "estimated") }
    }
    if wanted("dayclose") {
        let close = Timestamp(seconds: Int64(day0 + Int32(days)) * 86_400 + 3600)
        // The history was built user by user; mobilityd also ticks `advance(to:)` on every user,
        // which merges the users created since the last tick into its sorted order. That one-off
        // merge (sorting every user id here) is done before the timing, as it would have been on
        // earlier ticks in production.
        engine.advance(to: Timestamp(seconds: Int64(day0 + Int32(days - 1)) * 86_400 + 9 * 3600), into: &out)
        let t = seconds { dayCloseRun(&engine, close, &out) }
        report("day close, all users", t, "s", "\(users) users, default rule pack")
    }
    if wanted("restart") {
        let dir = NSTemporaryDirectory() + "mw-bench-\(UUID().uuidString.prefix(8))"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let store = try! StateStore(path: dir + "/state.sqlite")
            // Timed with the engine's part of a commit, the snapshots (the store writes those).
            let ids = engine.allStates.map(\.user)
            var records: [StateStore.UserRecord] = []
            let snapshots = seconds { records = ids.map { StateStore.UserRecord(user: $0, appliedSeq: 1, eventNow: nil, state: engine.changes(of: $0)) } }
            let write = seconds { _ = try! store.commit(users: records, outbox: []) }
            report("state store, commit all users", snapshots + write, "s", "\(users) users, engine snapshots and the store's write")
            report("  of which engine snapshots", snapshots, "s", "Engine.changes(of:) of every user")
        }
        // The store is closed here, as after a clean stop: SQLite copies the WAL into the database
        // file and removes it when the last connection closes. (Left open, the first load reads
        // every page through the WAL index of one huge transaction: 1.9 s instead of ~0.8 s at 100 k.)
        var loads: [Double] = []
        let restart = median(
            (0..<runs).map { _ in
                // Timed to "serving": the restored engine is torn down outside the timing (freeing
                // every user's state is not part of a restart; at 100 k users it took longer than the load).
                var restored: Engine?
                var load = 0.0
                let t = seconds { restored = restartRun(dir + "/state.sqlite", program, load: &load) }
                loads.append(load)
                precondition(restored?.userCount == users)
                restored = nil
                return t
            })
        report("restart: open, load, restore", restart, "s", "\(users) users")
        report("  of which open and load", median(loads), "s", "SQLite and decoding, two threads")
    }
}

if wanted("history") {
    // The care-team history as mobilityd writes it: at each day close, every series point of the
    // day for each user (one row each), committed per shard batch of 1000 users.
    let dir = NSTemporaryDirectory() + "mw-bench-\(UUID().uuidString.prefix(8))"
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let store = try! StateStore(path: dir + "/state.sqlite")
    let names = program.series.map(\.name)
    let historyUsers = smoke ? 200 : users, historyDays = smoke ? 7 : days
    let ids = (0..<historyUsers).map { "u\($0)" }
    var rows: [HistoryRecord] = []
    var commitSeconds = 0.0
    for d in 0..<historyDays {
        let day = CivilDate(dayNumber: CivilDate(year: 2026, month: 1, day: 1).dayNumber + Int32(d))
        for start in stride(from: 0, to: historyUsers, by: 1000) {
            rows.removeAll(keepingCapacity: true)
            for (k, u) in ids[start..<min(start + 1000, historyUsers)].enumerated() {
                for (j, n) in names.enumerated() {
                    rows.append(
                        .series(SeriesPoint(user: u, name: n, day: day, value: (k + j + d) % 9 == 0 ? nil : 1.0 + Double((k + d) % 13) * 0.01, unit: "m/s")))
                }
            }
            commitSeconds += seconds { _ = try! store.commit(users: [], outbox: [], history: rows) }
        }
    }
    try! store.checkpoint()
    let attributes = try? FileManager.default.attributesOfItem(atPath: dir + "/state.sqlite")
    let fileBytes = (attributes?[.size] as? Int) ?? 0
    let userDays = Double(historyUsers * historyDays)
    report(
        "history: commit per user-day", commitSeconds / userDays * 1e6, "µs",
        "\(names.count) series points a user-day, \(historyUsers) users × \(historyDays) days")
    report("history: bytes per user-day", Double(fileBytes) / userDays, "bytes", "SQLite file after checkpoint")
    let readUsers = ids.prefix(smoke ? 50 : 1000)
    let read = seconds { for u in readUsers { _ = try! store.history(of: u, from: .min, through: .max) } }
    report("history: read one user's \(historyDays) days", read / Double(readUsers.count) * 1e3, "ms", "\(names.count) series")
    // The weekly close as mobilityd runs it (WeeklyReports): per user, read the week, the week
    // before and the baseline days, build the digest, then keep all digests in one commit.
    if let declared = program.report {
        let spec = ReportSpec(declared)
        let last = CivilDate(year: 2026, month: 1, day: 1).dayNumber + Int32(historyDays - 1)
        let week = ISOWeek(containing: last).previous
        var weekly: [HistoryRecord] = []
        let close = seconds {
            for u in ids {
                let h = try! store.history(of: u, from: week.monday - 45, through: week.sunday)
                let d = WeeklyDigest.make(history: h, spec: spec, week: week)
                weekly.append(HistoryRecord(user: u, kind: .weekly, key: week.description, day: week.monday, payload: Array(d.json.utf8)))
            }
            _ = try! store.commit(users: [], outbox: [], history: weekly)
        }
        report("history: weekly close, all users", close, "s", "\(historyUsers) users, one shard; digest of \(weekly.first?.payload.count ?? 0) bytes")
    }
}

if wanted("decode") {
    var accepted = 0
    let single = median(
        (0..<runs).map { _ in
            seconds { for (u, p) in singles { if case .success(let items) = decoder.samples(p, user: u) { accepted += items.count } } }
        })
    report("decode, 1 sample per payload", Double(singles.count) / single, "samples/s", "one core")
    let batchCount = batches.reduce(0) { $0 + (try! decoder.samples($1.1, user: $1.0).get().count) }
    let batch = median((0..<runs).map { _ in seconds { for (u, p) in batches { _ = decoder.samples(p, user: u) } } })
    report("decode, batches", Double(batchCount) / batch, "samples/s", "\(batchCount / max(batches.count, 1)) per payload, one core")
    if accepted == 0 { exit(1) }
}

if wanted("reports") {
    // The care-team pages of a realistic 90-day history: the heat-wave scenario's traffic through
    // the engine with the rules, every output recorded as the store's history holds it.
    let path = "simulator/scenarios/jamie-heat-wave.scenario"
    guard let scenario = try? Scenario.load(path) else {
        FileHandle.standardError.write(Data("mobility-bench: cannot read \(path) (run from the repository's root)\n".utf8))
        exit(1)
    }
    var ingestor = Ingestor(engine: Engine(program: program, configuration: EngineConfiguration()), clock: .event)
    var out: [EngineOutput] = []
    for r in ScenarioVerifier.traffic([scenario]) { ingestor.handle(topic: r.topic, payload: r.payload, now: Timestamp(milliseconds: 0), into: &out) }
    ingestor.closeOpenDays(into: &out)
    var history = UserHistory(user: scenario.persona.user)
    for o in out {
        switch o {
        case .series(let p): history.record(p)
        case .alert(let a): history.record(a)
        case .rejected: break
        }
    }
    for e in ingestor.engine.timeline(of: history.user) { history.record(e) }
    guard let declared = program.report else {
        FileHandle.standardError.write(Data("mobility-bench: the rules in \(rules) declare no report block\n".utf8))
        exit(1)
    }
    let spec = ReportSpec(declared)
    let heat = scenario.timeline.heatWave.map { ($0.lowerBound + $0.upperBound) / 2 } ?? scenario.timeline.days - 7
    let week = ISOWeek(containing: scenario.timeline.start.dayNumber - 1 + DayNumber(heat))
    let pagesPerRun = smoke ? 2 : 50
    var panelBytes = 0, weeklyBytes = 0
    let digestTime =
        median(
            (0..<runs).map { _ in
                seconds { for _ in 0..<pagesPerRun { weeklyBytes = WeeklyDigest.make(history: history, spec: spec, week: week).json.utf8.count } }
            }) / Double(pagesPerRun)
    let digest = WeeklyDigest.make(history: history, spec: spec, week: week)
    let panelTime =
        median(
            (0..<runs).map { _ in
                seconds { for _ in 0..<pagesPerRun { panelBytes = ReportPage.panel(history: history, spec: spec).utf8.count } }
            }) / Double(pagesPerRun)
    let digestBytes = weeklyBytes
    let weeklyTime =
        median(
            (0..<runs).map { _ in
                seconds { for _ in 0..<pagesPerRun { weeklyBytes = ReportPage.weekly(digest: digest, history: history, spec: spec).utf8.count } }
            }) / Double(pagesPerRun)
    let points = history.series.values.reduce(0) { $0 + $1.count }
    let note = "\(history.user): \(scenario.timeline.days) days, \(points) series points, \(history.alerts.count) alert episodes"
    report("reports: weekly digest (\(week))", digestTime * 1e3, "ms", "\(digestBytes) bytes of JSON")
    report("reports: recovery page", panelTime * 1e3, "ms", "\(panelBytes) bytes; \(note)")
    report("reports: weekly page (\(week))", weeklyTime * 1e3, "ms", "\(weeklyBytes) bytes")
}

/// The timed engine loop, kept out of line so that a profiler can isolate it
/// (`valgrind --tool=callgrind --toggle-collect='*engineRun*' … engine`).
@inline(never)
func engineRun(_ engine: inout Engine, _ decoded: [DecodedSample], users: Int) -> Int {
    var out: [EngineOutput] = []
    var alerts = 0
    var clock = [Timestamp](repeating: Timestamp(milliseconds: .min), count: users)  // each user's event clock
    // Read in place through the buffer: copying each element (strings, a dictionary) would be harness cost.
    decoded.withUnsafeBufferPointer { items in
        for i in items.indices {
            let k = items[i].slot
            let now = max(clock[k], items[i].sample.end)
            clock[k] = now
            engine.ingest(items[i].sample, user: items[i].user, now: now, into: &out)
            engine.advance(user: items[i].user, to: now, into: &out)
            alerts += out.count
            out.removeAll(keepingCapacity: true)
        }
    }
    return alerts
}

if wanted("engine") {
    // Decoded samples for `users` users over `days` days, fed per user in time order with the
    // user's event clock; the engine closes days as the clock passes them.
    let pop = Population(users: users, days: days, seed: 2)
    var decoded: [DecodedSample] = []
    var userIndex: [String: Int] = [:]
    for r in pop.traffic() where r.topic.hasSuffix("/samples") {
        let u = String(r.topic.split(separator: "/")[3])
        let k = userIndex[u] ?? userIndex.count
        userIndex[u] = k
        if case .success(let items) = decoder.samples(r.payload, user: u) {
            for case .success(let s) in items { decoded.append(DecodedSample(user: u, slot: k, sample: s)) }
        }
    }
    var times: [Double] = []
    var alerts = 0
    for _ in 0..<runs {
        var engine = Engine(
            program: program,
            configuration: {
                var c = EngineConfiguration(); c.publishSeries = false; return c
            }())
        times.append(seconds { alerts += engineRun(&engine, decoded, users: userIndex.count) })
    }
    report("engine, ingest + rules", Double(decoded.count) / median(times), "samples/s", "\(users) users × \(days) days, one core")
}

/// The timed day close, kept out of line so that a profile can select it
/// (`valgrind --tool=callgrind --toggle-collect='*dayCloseRun*' … dayclose`).
@inline(never)
func dayCloseRun(_ engine: inout Engine, _ close: Timestamp, _ out: inout [EngineOutput]) {
    engine.advance(to: close, into: &out)
}

/// The timed restart: open the store, load every user, restore them into an engine
/// (`valgrind --tool=callgrind --toggle-collect='*restartRun*' … restart`).
@inline(never)
func restartRun(_ path: String, _ program: Program, load: inout Double) -> Engine {
    var loaded: [StoredUser<PreparedUser>] = []
    var e = Engine(program: program)
    load = seconds {
        let s = try! StateStore(path: path)
        loaded = try! s.load(alertNames: e.alertNames, prepare: e.preparer).users  // states made on the load's threads, as mobilityd does
    }
    e.reserveUsers(loaded.count)
    for i in loaded.indices { if let st = loaded[i].state.take() { e.restore(st) } }  // moved, as mobilityd does
    loaded.removeAll()  // the loaded copies go as they would in the daemon (the engine holds the states)
    return e
}

/// A decoded sample of the engine benchmark, with its user and the user's index.
struct DecodedSample {
    var user: String
    var slot: Int
    var sample: Sample
}
