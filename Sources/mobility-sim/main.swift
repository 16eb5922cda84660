import Foundation
import Ingest
import MQTTTransport
import MobilityModel
import MobilityWire
import RuleEngine
import RuleLanguage
import Simulator
import Synchronization

/// `mobility-sim`: stands in for the gateways. Exit codes: 0 ok, 1 failure, 2 usage.
let usage = """
    usage: mobility-sim <command> [options]

    commands:
      play SCENARIO...|TRAFFIC.jsonl --broker URL [--speed real|Nx|max | --rate N] [--resend] [BROKER OPTIONS]
            publish the traffic at QoS 1 in order, as gateways would (Nx: N times event time;
            --rate: N messages a second, evenly spaced, traffic files too);
            --resend keeps what mobilityd has not acknowledged on users/{user}/acks and re-sends it
            once the acknowledgements stop advancing (2 s, doubling after each re-send up to 60 s;
            at most 8 re-sends)
      record SCENARIO... -o TRAFFIC.jsonl
            write the same traffic as {"topic","payload"} JSON lines (for mobilityctl replay)
      verify SCENARIO... (--broker URL [BROKER OPTIONS] [--account ACCOUNT] | --rules DIR)
            play and compare the alerts with each scenario's expectations; with --rules, run the
            engine in-process instead of a live mobilityd --clock event; exit 0 if all pass;
            with --credentials the alerts are read as ACCOUNT (default care-dashboard)
      export EXPORT.xml|export.zip --user ID (--broker URL | -o TRAFFIC.jsonl) [--time-zone ZONE]
            replay a real Apple Health export (streaming parse, mobility records only)
      population --users N --days D --seed S [--cohort default|wide|clinic] [--samples-per-message K] [--sync-days N] -o TRAFFIC.jsonl
            a cohort with a mix of recovery patterns (clinic: the hard shapes of docs/alert-quality.md,
            each phone with its own noise and sync); ground-truth labels (with onsets, traits) go to
            TRAFFIC.labels.jsonl; K: at most K samples a message (default each hour's in one);
            N: each phone syncs every N days, its samples of those days in messages running across them
      quality --users N --days D (--seed S | --seeds S1,S2,...) [--cohort default|wide|clinic] --rules DIR [--threads T]
            run such cohorts through the engine in-process; print each rule's precision, recall,
            false alerts per 100 patient-weeks at risk and over all weeks, and detection delay
            (95 % intervals), overall and per shape (pattern, +trait), pooled over seeds
            (users shared out over T threads, default the cores: the scores do not depend on T)

    broker options (for a secured broker such as deploy/mosquitto.conf):
      --credentials FILE   log in from FILE (mode 0600 or 0400): 'account password' lines; each user's
                           traffic is published on a connection of its own, as its user id
      --ca-file PATH       CA certificate for mqtts:// (default: system store)
      --cert-file PATH, --key-file PATH   client certificate and key for mqtts://
      --mqtt-version 3.1.1|5   default 5 with --credentials (a refused publish fails the run), else 3.1.1
      Passwords are never taken from the command line (every local user can read it).

    SCENARIO is a .scenario file (see simulator/scenarios/README.md), a directory of them, or a
    built-in story: \(BuiltinScenario.allCases.map(\.rawValue).joined(separator: ", ")).
    """

func die(_ m: String, _ code: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data("mobility-sim: \(m)\n".utf8))
    exit(code)
}

struct Options {
    var inputs: [String] = []
    var output: String?
    var broker: String?
    var rules: String?
    var speed = "max"
    /// `--rate`: messages a second, evenly spaced, instead of `--speed`.
    var rate: Double?
    var user: String?
    var timeZone = "UTC"
    var users = 1000
    var days = 90
    var seed: UInt64 = 1
    var seeds: [UInt64]?
    var cohort = Population.Cohort.default
    var samplesPerMessage: Int?
    var syncDays: Int?
    var threads = ProcessInfo.processInfo.activeProcessorCount
    var resend = false
    var credentials: String?
    var reader = "care-dashboard"
    var caFile: String?
    var certFile: String?
    var keyFile: String?
    var mqttVersion: String?
}

var args = Array(CommandLine.arguments.dropFirst())
guard let command = args.first else { die("name a command\n\n" + usage) }
if ["-h", "--help"].contains(command) || (command == "help" && args.count == 1) {
    print(usage)
    exit(0)
}
args.removeFirst()
var o = Options()
var i = 0
while i < args.count {
    let a = args[i]
    func value() -> String { i += 1; guard i < args.count else { die("\(a) needs a value") }; return args[i] }
    switch a {
    case "-o", "--output": o.output = value()
    case "--broker": o.broker = value()
    case "--rules": o.rules = value()
    case "--speed": o.speed = value()
    case "--rate":
        o.rate =
            Double(value()).flatMap { $0 > 0 && $0 <= 1_000_000 ? $0 : nil } ?? { die("--rate takes messages a second, more than 0 and at most 1000000") }()
    case "--user": o.user = value()
    case "--time-zone": o.timeZone = value()
    case "--users": o.users = Int(value()) ?? { die("--users takes a number") }()
    case "--days": o.days = Int(value()) ?? { die("--days takes a number") }()
    case "--seed": o.seed = UInt64(value()) ?? { die("--seed takes a number") }()
    case "--seeds":
        let list = value().split(separator: ",").map { UInt64($0) }
        guard !list.isEmpty, list.allSatisfy({ $0 != nil }) else { die("--seeds takes numbers separated by commas, e.g. 1,2,3") }
        o.seeds = list.map { $0! }
    case "--cohort":
        let v = value()
        o.cohort =
            Population.Cohort(rawValue: v) ?? { die("--cohort takes \(Population.Cohort.allCases.map(\.rawValue).joined(separator: " or ")), not '\(v)'") }()
    case "--threads": o.threads = Int(value()).flatMap { (1...64).contains($0) ? $0 : nil } ?? { die("--threads takes 1 to 64") }()
    case "--sync-days": o.syncDays = Int(value()).flatMap { (1...366).contains($0) ? $0 : nil } ?? { die("--sync-days takes 1 to 366") }()
    case "--samples-per-message": o.samplesPerMessage = Int(value()).flatMap { $0 >= 1 ? $0 : nil } ?? { die("--samples-per-message takes a number ≥ 1") }()
    case "--builtin": o.inputs.append(value())
    case "--resend": o.resend = true
    case "--credentials": o.credentials = value()
    case "--account", "--reader": o.reader = value()  // --reader: the older spelling, kept for a release
    case "--ca-file": o.caFile = value()
    case "--cert-file": o.certFile = value()
    case "--key-file": o.keyFile = value()
    case "--mqtt-version": o.mqttVersion = value()
    case "--password", "--password-file", "--username":
        die(
            "\(a == "--password" ? "--password is refused on the command line (every local user can read a process's arguments)" : "\(a) is not an option"); "
                + "put one 'account password' line per user (the account is the user id) in a file of mode 0600 and pass --credentials FILE")
    case "-h", "--help": print(usage); exit(0)
    default:
        if a.hasPrefix("-") { die("unknown option \(a)") }
        o.inputs.append(a)
    }
    i += 1
}

/// Scenarios and traffic files named on the command line.
func loadInputs(_ inputs: [String]) -> (scenarios: [Scenario], files: [String]) {
    var scenarios: [Scenario] = [], files: [String] = []
    for p in inputs {
        if let b = BuiltinScenario(rawValue: p) { scenarios.append(b.scenario); continue }
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: p, isDirectory: &isDir) else { die("\(p): no such file, directory or built-in scenario", 1) }
        let paths =
            isDir.boolValue
            ? ((try? FileManager.default.contentsOfDirectory(atPath: p)) ?? []).filter { $0.hasSuffix(".scenario") }.sorted().map { p + "/" + $0 }
            : [p]
        for f in paths {
            if f.hasSuffix(".jsonl") { files.append(f); continue }
            do { scenarios.append(try Scenario.load(f)) } catch { die(error.description, 1) }
        }
    }
    let users = scenarios.map(\.persona.user)
    if Set(users).count != users.count { die("two scenarios simulate the same user; give each its own 'user'", 1) }
    return (scenarios, files)
}

func records(scenarios: [Scenario], files: [String]) -> [TrafficRecord] {
    var out = ScenarioVerifier.traffic(scenarios)
    for f in files {
        guard let h = FileHandle(forReadingAtPath: f) else { die("cannot read \(f)", 1) }
        let data = h.readDataToEndOfFile()
        for (n, line) in data.split(separator: 10).enumerated() where !line.isEmpty {
            switch TrafficRecord.parse(Array(line)) {
            case .success(let r): out.append(r)
            case .failure(let e): die("\(f):\(n + 1): \(e)", 1)
            }
        }
    }
    return out
}

/// The broker access of the options: the URL, TLS files, version and the credentials file.
func brokerAccess(_ url: String, _ o: Options) -> BrokerAccess {
    let broker: BrokerURL
    do { broker = try BrokerURL(parsing: url) } catch { die(error.description) }
    var credentials: BrokerCredentials?
    if let path = o.credentials {
        do { credentials = try BrokerCredentials.load(path) } catch { die(error.description) }
    }
    var version: MQTTClientConfiguration.ProtocolVersion = credentials == nil ? .v311 : .v5
    if let v = o.mqttVersion {
        guard let p = MQTTClientConfiguration.ProtocolVersion(option: v) else { die("--mqtt-version must be 3.1.1 or 5") }
        version = p
    }
    if let problem = BrokerTLSFiles(caFile: o.caFile, certFile: o.certFile, keyFile: o.keyFile).problem(for: broker) { die(problem) }
    if credentials != nil, version == .v311 {
        FileHandle.standardError.write(
            Data("mobility-sim: note: under MQTT 3.1.1 a publish the broker refuses is acknowledged like any other; --mqtt-version 5 reports it\n".utf8))
    }
    return BrokerAccess(broker: broker, credentials: credentials, caFile: o.caFile, certFile: o.certFile, keyFile: o.keyFile, protocolVersion: version)
}

/// `--speed`: nil for max (flow-controlled by acknowledgements), else the factor on event time.
func speedFactor(_ speed: String, timed: Bool) -> Double? {
    let factor: Double?
    switch speed {
    case "max": factor = nil
    case "real": factor = 1
    default:
        guard let f = Double(speed.replacingOccurrences(of: "x", with: "").replacingOccurrences(of: "×", with: "")), f > 0 else {
            die("--speed takes real, max or a factor such as 1000x")
        }
        factor = f
    }
    if factor != nil, !timed { die("--speed real|Nx needs scenarios (traffic files carry no publish times); use max") }
    return factor
}

/// Connects the gateways for `records` (one login per user with --credentials) before anything is published.
func gateways(_ access: BrokerAccess, for records: [TrafficRecord], onAck: (@Sendable ([UInt8]) -> Void)? = nil) -> Gateways {
    do {
        let users = try Gateways.users(of: records, needUser: access.credentials != nil)
        return try Gateways(access: access, users: users, onAck: onAck)
    } catch { die(error.description, error.exitCode) }
}

/// Publishes in order and reports on stderr; true if the broker accepted every message.
func play(_ g: Gateways, _ records: [TrafficRecord], times: [Timestamp]? = nil, factor: Double? = nil) -> Bool {
    do {
        let report = try g.play(records, times: times, factor: factor)
        FileHandle.standardError.write(Data("mobility-sim: \(report)\n".utf8))
        return report.complete
    } catch { die(error.description, error.exitCode) }
}

func write(_ lines: some Sequence<String>, to path: String) {
    guard FileManager.default.createFile(atPath: path, contents: nil), let h = FileHandle(forWritingAtPath: path) else { die("cannot write \(path)", 1) }
    var buf = ""
    for l in lines {
        buf += l + "\n"
        if buf.utf8.count > 1 << 20 { h.write(Data(buf.utf8)); buf = "" }
    }
    h.write(Data(buf.utf8))
    h.closeFile()
}

switch command {
case "list":
    for b in BuiltinScenario.allCases { print(b.rawValue) }
case "record":
    guard let out = o.output, !o.inputs.isEmpty else { die("record needs SCENARIO... and -o FILE") }
    let (s, f) = loadInputs(o.inputs)
    write(records(scenarios: s, files: f).map(\.line), to: out)
case "play":
    guard let broker = o.broker, !o.inputs.isEmpty else { die("play needs SCENARIO...|TRAFFIC.jsonl and --broker URL") }
    let (s, f) = loadInputs(o.inputs)
    var timed: [TrafficGenerator.Timed] = []
    for sc in s { timed += sc.generator.generate() }
    timed = timed.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
    let recs = f.isEmpty ? timed.map(\.record) : records(scenarios: s, files: f)
    var times = f.isEmpty ? timed.map(\.at) : nil
    var factor = speedFactor(o.speed, timed: times != nil || o.rate != nil)
    if let rate = o.rate {
        guard factor == nil else { die("--rate and --speed real|Nx are two paces; give one") }
        // A second of "event time" a message, played `rate` times as fast.
        (times, factor) = ((0..<recs.count).map { Timestamp(milliseconds: Int64($0) * 1000) }, rate)
    }
    let access = brokerAccess(broker, o)
    guard o.resend else { exit(play(gateways(access, for: recs), recs, times: times, factor: factor) ? 0 : 1) }
    let tracker = ResendTracker(recs)
    // Each gateway reads its own user's retained acks (the anonymous connection every user's).
    let g = gateways(access, for: recs) { payload in tracker.acknowledged(payload) }
    guard play(g, recs, times: times, factor: factor) else { exit(1) }
    for round in 1...8 {
        // Wait for the acknowledgements to settle, then re-send the rest: 2 s without progress
        // before the first re-send, doubling after each (a daemon catching up acknowledges late,
        // and re-sending everything every 2 s would only lengthen its backlog).
        let quiet = min(2 * Double(1 << (round - 1)), 60)
        var last = -1, quietSince = Date()
        while Date().timeIntervalSince(quietSince) < quiet {
            let n = tracker.acknowledgedCount
            if n != last { last = n; quietSince = Date() }
            if tracker.complete { break }
            usleep(50_000)
        }
        if tracker.complete { break }
        let pending = tracker.unacknowledged()
        FileHandle.standardError.write(Data("mobility-sim: round \(round): re-sending \(pending.count) unacknowledged messages\n".utf8))
        guard play(g, pending) else { exit(1) }
    }
    g.stop()
    FileHandle.standardError.write(Data("mobility-sim: \(tracker.complete ? "every" : "NOT every") user's samples acknowledged\n".utf8))
    exit(tracker.complete ? 0 : 1)
case "verify":
    let (s, f) = loadInputs(o.inputs)
    guard !s.isEmpty, f.isEmpty else { die("verify takes scenarios") }
    let recs = records(scenarios: s, files: [])
    var transitions: [AlertTransition] = []
    if let rules = o.rules {
        let (sources, errors) = RuleSet.load([rules])
        guard errors.isEmpty, let program = Checker.check(sources).program else { die("the rules in \(rules) do not check; run mobilityctl check", 1) }
        transitions = ScenarioVerifier.replay(recs, program: program)
    } else if let broker = o.broker {
        let store = Mutex<[AlertTransition]>([])
        let count = Atomic<Int>(0)
        let users = Set(s.map(\.persona.user))
        let access = brokerAccess(broker, o)
        // Every login is checked before the first connection: the gateways' and the reader's.
        if let c = access.credentials, !c.missing([o.reader]).isEmpty {
            die("credentials file \(c.path) has no line for \(o.reader) (the --account verify reads alerts with)")
        }
        if let c = access.credentials, case let missing = c.missing(users), !missing.isEmpty {
            die("credentials file \(c.path) has no line for \(missing.joined(separator: ", ")) (each gateway logs in as its user id)")
        }
        let sub: BrokerConnection
        do {
            sub = try access.reader(account: access.credentials == nil ? nil : o.reader, filters: ["\(TopicLayout.defaultRoot)/users/+/alerts/#"]) {
                _, payload in
                guard !payload.isEmpty, let t = AlertTransition.parse(payload), users.contains(t.user) else { return }
                store.withLock { $0.append(t) }
                count.add(1, ordering: .relaxed)
            }
        } catch { die(error.description, error.exitCode) }
        // The daemon's retained per-user acks say when everything is committed, and with it every
        // alert it produced is in its outbox: wait for them first (at most 60 s), so that a daemon
        // that is slow to process (a loaded machine) is not taken for one that has finished.
        let tracker = ResendTracker(recs)
        let g = gateways(access, for: recs) { payload in tracker.acknowledged(payload) }
        guard play(g, recs) else { die("not every message was acknowledged", 1) }
        let deadline = Date().addingTimeInterval(60)
        while !tracker.complete && Date() < deadline { usleep(50_000) }
        g.stop()
        // Then until alerts stop arriving (2 s of quiet).
        var last = -1, quietSince = Date()
        while Date() < deadline {
            let c = count.load(ordering: .relaxed)
            if c != last { last = c; quietSince = Date() }
            if Date().timeIntervalSince(quietSince) > 2 { break }
            usleep(50_000)
        }
        sub.stop()
        transitions = store.withLock { $0 }
    } else {
        die("verify needs --broker URL (a live mobilityd --clock event) or --rules DIR (in-process)")
    }
    let results = ScenarioVerifier(scenarios: s).verify(transitions)
    print(ScenarioVerifier.report(results), terminator: "")
    exit(results.allSatisfy(\.passed) ? 0 : 1)
case "export":
    guard let input = o.inputs.first, let user = o.user else { die("export needs EXPORT.xml|export.zip and --user ID") }
    guard TopicLayout.isValidUser(user) else { die("--user must be 1-64 characters of A-Z a-z 0-9 _ -") }
    guard o.broker != nil || o.output != nil else { die("export needs --broker URL or -o TRAFFIC.jsonl") }
    do {
        let export = try HealthExport(path: input, user: user, defaultTimeZone: o.timeZone)
        let (recs, report) = try export.traffic()
        FileHandle.standardError.write(Data(report.description.utf8))
        if let out = o.output { write(recs.map(\.line), to: out) }
        if let broker = o.broker { exit(play(gateways(brokerAccess(broker, o), for: recs), recs) ? 0 : 1) }
    } catch { die("\(error)", 1) }
case "population":
    guard let out = o.output else { die("population needs -o TRAFFIC.jsonl") }
    var pop = Population(users: o.users, days: o.days, seed: o.seed, cohort: o.cohort)
    pop.samplesPerMessage = o.samplesPerMessage
    pop.syncDays = o.syncDays
    let labelsPath = out.hasSuffix(".jsonl") ? String(out.dropLast(6)) + ".labels.jsonl" : out + ".labels.jsonl"
    write(pop.labels().map(\.json), to: labelsPath)
    write(pop.traffic().lazy.map(\.line), to: out)
    FileHandle.standardError.write(Data("mobility-sim: \(o.users) users × \(o.days) days → \(out), labels → \(labelsPath)\n".utf8))
case "quality":
    guard let rules = o.rules else { die("quality needs --rules DIR") }
    let (sources, errors) = RuleSet.load([rules])
    guard errors.isEmpty, let program = Checker.check(sources).program else { die("the rules in \(rules) do not check", 1) }
    let began = Date()
    let seeds = o.seeds ?? [o.seed]
    var pooled = QualityReport()
    var perSeed: [String] = []
    for seed in seeds {
        let r = Population(users: o.users, days: o.days, seed: seed, cohort: o.cohort).quality(program: program, threads: o.threads)
        pooled.add(r)
        perSeed.append("seed \(seed): " + r.seedSummary())
    }
    let secs = Date().timeIntervalSince(began)
    print(pooled.table(), terminator: "")
    print("")
    print(pooled.shapeTables(), terminator: "")
    print(pooled.breakdown(), terminator: "")
    if seeds.count > 1 { print(perSeed.joined(separator: "\n")) }
    print(
        "\n\(o.cohort.rawValue) cohort, \(o.users) users × \(o.days) days, seed\(seeds.count > 1 ? "s" : "") \(seeds.map(String.init).joined(separator: ",")): "
            + "\(pooled.messages) messages in \(String(format: "%.1f", secs)) s")
default:
    die("unknown command '\(command)'; expected list, record, play, verify, export, population or quality (mobility-sim --help)")
}

/// The gateway half of the acknowledgement protocol: per user, the messages in publish order and how
/// far mobilityd's retained `users/{user}/acks` (`{"user", "lastId"}`) says they are committed.
final class ResendTracker: Sendable {
    private struct State {
        var perUser: [String: [Int]] = [:]  // user → record indices in order
        var position: [String: [String: Int]] = [:]  // user → sample id → position in perUser
        var ackedThrough: [String: Int] = [:]  // user → last acknowledged position
        var lastSamplePosition: [String: Int] = [:]
        var acks = 0
    }
    private let state: Mutex<State>
    private let records: [TrafficRecord]

    init(_ records: [TrafficRecord]) {
        self.records = records
        var s = State()
        for (i, r) in records.enumerated() {
            let parts = r.topic.split(separator: "/")
            guard parts.count >= 5 else { continue }
            let user = String(parts[3])
            let pos = s.perUser[user, default: []].count
            s.perUser[user, default: []].append(i)
            guard r.topic.hasSuffix("/samples"), case .success(let v) = JSONValue.parse(r.payload) else { continue }
            var items: [JSONValue] = []
            if case .array(let a) = v { items = a } else { items = [v] }
            for it in items { if case .string(let id)? = it["id"] { s.position[user, default: [:]][id] = pos } }
            s.lastSamplePosition[user] = pos
        }
        state = Mutex(s)
    }

    func acknowledged(_ payload: [UInt8]) {
        guard case .success(let v) = JSONValue.parse(payload), case .string(let user)? = v["user"], case .string(let id)? = v["lastId"] else { return }
        state.withLock { s in
            guard let pos = s.position[user]?[id] else { return }
            if pos > s.ackedThrough[user, default: -1] { s.ackedThrough[user] = pos; s.acks += 1 }
        }
    }

    var acknowledgedCount: Int { state.withLock { $0.acks } }

    /// Every user's last samples message is acknowledged.
    var complete: Bool { state.withLock { s in s.lastSamplePosition.allSatisfy { s.ackedThrough[$0.key, default: -1] >= $0.value } } }

    /// The messages after each user's acknowledged position, in the original order.
    func unacknowledged() -> [TrafficRecord] {
        state.withLock { s in
            var idx: [Int] = []
            for (u, list) in s.perUser { idx += list.dropFirst(s.ackedThrough[u, default: -1] + 1) }
            return idx.sorted().map { records[$0] }
        }
    }
}
