import Foundation
import Glibc
import HTTPEndpoint
import Ingest
import MQTTTransport
import MobilityModel
import MobilityWire
import RuleEngine

/// Everything `mobilityd` can be told. Precedence: flags, then `MOBILITYD_*` environment
/// variables, then the config file (`--config`), then defaults.
package struct DaemonConfiguration: Sendable {
    /// The broker URL (`--broker`: `mqtt://` or `mqtts://` host and port), or the nodes of one
    /// broker cluster separated by commas, this instance's own first (``BrokerURL/list(parsing:)``).
    package var broker = "mqtt://127.0.0.1:1883"
    /// The brokers of `--broker` in the order tried (empty for a value that does not parse, which
    /// the options refuse).
    package var brokers: [BrokerURL] { (try? BrokerURL.list(parsing: broker)) ?? [] }
    /// ``brokers`` as the logs and `--check-config` name them.
    package var brokerNames: String { brokers.map(\.description).joined(separator: ",") }
    /// The rules file or directory (`--rules`).
    package var rules = "rules"
    /// The state directory (`--state`): SQLite store and ingest journal, private to the daemon.
    package var state = "state"
    /// Where state is committed (`--store`, DaemonConfiguration+Store.swift): SQLite in ``state`` by default.
    package var store = StoreLocation.sqlite
    /// Wall clock (live) or event time (replays) decides when days close (`--clock`).
    package var clock = ClockMode.wall
    /// The instance name in `daemon/{instance}/status` and in logs (`--instance`).
    package var instance = "mobilityd"
    /// The subscriber connection's MQTT client id (default: derived from the instance).
    package var clientID: String?
    /// The subscriber connection's MQTT username (`--username`).
    package var username: String?
    /// The publisher connection's username (default: ``username``). A broker that binds client
    /// ids to usernames (`use_username_as_clientid`, as `deploy/mosquitto.conf` does) needs an
    /// account of its own for each connection.
    package var publisherUsername: String?
    /// Whether the broker may bind client ids to usernames (`--broker-binds-client-ids`, default
    /// true, as `deploy/mosquitto.conf` does): then one account for both connections is refused
    /// (``accountProblem``). False states that the broker keeps the two client ids apart.
    package var brokerBindsClientIDs = true
    /// The MQTT password (from `--password-file`, the config file or `MOBILITYD_PASSWORD`; never the command line).
    package var password: String?
    /// CA certificates to verify the broker with (`--ca-file`).
    package var caFile: String?
    /// The client certificate for TLS client authentication (`--cert-file`, with `keyFile`).
    package var certFile: String?
    /// The client certificate's private key (`--key-file`).
    package var keyFile: String?
    /// The MQTT protocol version (`--mqtt-version`: 3.1.1 or 5; 5 reports ACL refusals).
    package var mqttVersion = MQTTClientConfiguration.ProtocolVersion.v311
    /// The topic root of the wire contract (`--topic-root`).
    package var topicRoot = TopicLayout.defaultRoot
    /// Worker shards. By default one per core but one, which is left to the MQTT network thread
    /// (on 2 cores one shard measured 0.85–0.88 of the broker's ceiling against 0.80 with two).
    /// A partitioned run keeps each partition's users in one shard, and has no more shards than
    /// partitions (``ShardRouting``).
    package var shards = DaemonConfiguration.defaultShards
    /// `cores − 1`, at least 1.
    package static var defaultShards: Int { max(1, ProcessInfo.processInfo.activeProcessorCount - 1) }
    /// Messages each shard queue holds before the network thread blocks (back-pressure to the broker).
    package var queueCapacity = 10_000
    /// Commit acknowledgements are published at most this often per shard (milliseconds; 0: after every commit).
    package var ackIntervalMs = 250
    /// Users' state is committed at most this often while nothing is to be published
    /// (milliseconds; 0: after every batch): `--commit-interval`, or ``defaultCommitIntervalMs``.
    /// The ingest journal, or a partition's stream, holds the messages meanwhile.
    package var commitIntervalMs: Int {
        get { commitIntervalGiven ?? defaultCommitIntervalMs }
        set { commitIntervalGiven = newValue }
    }
    /// `--commit-interval` as given (nil: ``defaultCommitIntervalMs``).
    private var commitIntervalGiven: Int?
    /// 100 ms, with the ingest journal (the single-node daemon, whose alerts commit at once
    /// whatever the interval) and with `--intake mqtt`; 500 ms with the JetStream intake, where a commit's fixed cost
    /// (its transaction, a partition's fetch and acknowledgement) is paid by every instance for
    /// every interval that brings messages, however few: at one offered load it took 20–49 %
    /// less CPU per message than 100 ms (docs/scaling.md, "The commit interval"). A message
    /// then waits up to 0.5 s for its fetch, and its commit acknowledgement up to about a second.
    package var defaultCommitIntervalMs: Int { partitioning?.intake == .jetStream ? 500 : 100 }
    /// The `/metrics` and `/healthz` listener (`--metrics-address`; nil: off).
    package var metricsAddress: String? = "127.0.0.1:9464"
    /// The report listener (`--http-address`; nil: off), its bearer tokens and TLS (see
    /// `DaemonConfiguration+HTTP.swift`).
    package var httpAddress: String?
    /// The report listener's bearer tokens (`--http-tokens`).
    package var httpTokens: BearerTokens?
    /// The report listener's certificate and key (`--http-tls-cert`, `--http-tls-key`).
    package var httpTLS: HTTPServer.TLS?
    /// The people who may sign in to the console (`--console-staff`); nil: no console.
    package var consoleStaff: StaffPasswords?
    /// The origins the console is served at (`--console-origin`; default the listener's own).
    package var consoleOrigins: [String] = []
    /// The console's session lifetimes (`--console-session-idle`, `--console-session-max`) and lockout.
    package var consoleSessionPolicy = ConsoleSessionTable.Policy()
    /// Log lines as logfmt or JSON (`--log-format`).
    package var logFormat = LogFormat.logfmt
    /// The least severe level logged (`--log-level`).
    package var logLevel = LogLevel.info
    /// The home zone of users whose samples carry UTC timestamps and no profile (`--time-zone`).
    package var timeZone = "UTC"
    /// A local day closes this many seconds after its midnight (`--grace`).
    package var graceSeconds: Int64 = 3600
    /// Samples older than this many days are rejected `too_late` (`--lateness`).
    package var latenessDays: Int64 = 7
    /// Clock-skew guard: samples this far after the clock are rejected `in_future` (`--max-future`).
    package var maxFutureSeconds: Int64 = 600
    /// Timeline entries may start at most this many days before the user's today.
    package var maxEventAgeDays = 730
    /// The largest payload read (`--max-payload`); larger ones are rejected `payload_too_large` unread.
    package var maxPayloadBytes = 256 * 1024
    /// Wall clock: how often days are closed, in seconds (`--tick`).
    package var tickSeconds = 60
    /// A shard busy with one batch longer than this is stalled: `/healthz` 503, no watchdog pings.
    package var stallTimeoutSeconds = 30
    /// Whether series points are published on MQTT (`--publish-series`; the history records them either way).
    package var publishSeries = true
    /// Days of care-team history kept before each user's latest day (series, alerts, timeline;
    /// also the 30 days before the latest clinical event); nil: no history (and no weekly reports).
    package var historyDays: Int? = 90
    /// The operator's care-team mapping (`--care-teams`): user → teams; see ``CareTeams``.
    package var careTeams: [String: [String]] = [:]
    /// Whether alerts and series are also published as FHIR R4 resources (`--fhir`).
    package var fhir = false
    /// Partitioned input with leases (`--partitions`, DaemonConfiguration+Partitions.swift); nil: off.
    package var partitioning: Partitioning?
    /// Go on after journal damage, with the records that are intact (`--recover-journal`,
    /// command line only: see ``DurableStateCheck``).
    package var recoverJournal = false
    /// Go on with a state store that is missing, empty, unreadable or older than the journal,
    /// rebuilt from what the journal holds (`--rebuild-store`, command line only).
    package var rebuildStore = false
    /// The ingest journal's segment size (`--journal-segment-bytes`): a segment is released once
    /// every record in it is committed.
    package var journalSegmentBytes = 64 << 20
    /// Check the configuration and rules, then exit (`--check-config`).
    package var checkConfig = false
    /// Print the usage and exit (`--help`).
    package var help = false

    /// Defaults.
    package init() {}

    /// A config-file line without its comment: `#` starts one at the start of the line or after
    /// whitespace, so a value may hold `#` (a password such as `pa#ss`).
    static func stripComment(_ line: Substring) -> String {
        var previous: Character = " "
        for i in line.indices {
            if line[i] == "#", previous == " " || previous == "\t" { return String(line[..<i]) }
            previous = line[i]
        }
        return String(line)
    }

    /// An option: its flag name, value placeholder and help text.
    struct Option {
        let name: String
        let value: String?
        let help: String
    }

    static let options: [Option] =
        [
            Option(
                name: "broker", value: "URL[,URL…]",
                help:
                    "broker, mqtt://HOST:PORT or mqtts://HOST:PORT (default mqtt://127.0.0.1:1883); several: the nodes of one cluster that shares sessions (NATS), tried in turn when one is lost"
            ),
            Option(name: "rules", value: "DIR", help: "rule files directory (default rules)"),
            Option(name: "state", value: "DIR", help: "state directory (default state)"),
            Option(
                name: "clock", value: "wall|event", help: "wall: days close by the wall clock (default); event: by each user's latest sample time (replays)"),
            Option(name: "instance", value: "NAME", help: "instance name in the status topic (default mobilityd)"),
            Option(name: "client-id", value: "ID", help: "MQTT client id of the persistent session (default mobilityd-INSTANCE)"),
            Option(name: "username", value: "NAME", help: "MQTT username"),
            Option(
                name: "publisher-username", value: "NAME",
                help: "MQTT username of the publisher connection, same password; required with --username unless --broker-binds-client-ids false"),
            Option(
                name: "broker-binds-client-ids", value: "true|false",
                help: "false: the broker keeps client ids apart from usernames, so both connections may log in as --username (default true)"),
            Option(name: "password", value: "SECRET", help: "MQTT password: config file (mode 0600) or MOBILITYD_PASSWORD only, refused on the command line"),
            Option(name: "password-file", value: "FILE", help: "read the MQTT password from FILE (mode 0600 or 0400; e.g. a systemd credential)"),
            Option(name: "ca-file", value: "PATH", help: "CA certificate for mqtts:// (default: system store)"),
            Option(name: "cert-file", value: "PATH", help: "client certificate for mqtts://"),
            Option(name: "key-file", value: "PATH", help: "client key for mqtts://"),
            Option(name: "mqtt-version", value: "3.1.1|5", help: "MQTT protocol version (default 3.1.1)"),
            Option(name: "topic-root", value: "ROOT", help: "topic root (default mobility/v1)"),
            Option(
                name: "shards", value: "N",
                help: "worker shards; users are hashed to shards (default: cores - 1, at least 1; partitioned: by partition, at most one per owned partition)"),
            Option(name: "queue-capacity", value: "N", help: "messages queued per shard before reading pauses (default 10000)"),
            Option(
                name: "ack-interval", value: "MS", help: "publish commit acknowledgements at most this often, coalesced per user (default 250; 0: every commit)"
            ),
            Option(
                name: "commit-interval", value: "MS",
                help:
                    "commit state at most this often while there is nothing to publish; the journal holds the messages meanwhile (default 100; 0: every batch). With --partitions and the JetStream intake (default 500, at most 1000) the stream holds them; a partition's batch with more input waiting behind it commits at once, and after any other the partition fetches again only this long after its last fetch"
            ),
            Option(name: "metrics-address", value: "HOST:PORT|off", help: "/metrics and /healthz listener, loopback only (default 127.0.0.1:9464)")
        ] + httpOptions + careTeamOptions + fhirOptions + storeOptions + partitionOptions + [
            Option(name: "log-format", value: "logfmt|json", help: "log line format on stderr (default logfmt)"),
            Option(name: "log-level", value: "debug|info|warn|error", help: "minimum level (default info)"),
            Option(name: "time-zone", value: "ZONE", help: "IANA zone of users without a profile (default UTC)"),
            Option(name: "grace", value: "SECONDS", help: "a day closes this long after local midnight (default 3600)"),
            Option(name: "lateness", value: "DAYS", help: "samples older than this are rejected as too late (default 7)"),
            Option(name: "max-future", value: "SECONDS", help: "clock-skew guard for future samples (default 600)"),
            Option(name: "max-event-age", value: "DAYS", help: "timeline entries may start at most this long before the user's today (default 730)"),
            Option(name: "max-payload", value: "BYTES", help: "largest accepted payload (default 262144)"),
            Option(name: "tick", value: "SECONDS", help: "wall clock: how often days are closed (default 60)"),
            Option(
                name: "stall-timeout", value: "SECONDS",
                help: "a shard busy with one batch longer than this is stalled: /healthz 503, systemd watchdog pings stop (default 30)"),
            Option(name: "publish-series", value: "true|false", help: "publish recorded series on MQTT (default true; the history records them either way)"),
            Option(name: "history-days", value: "DAYS|off", help: "care-team history kept before each user's latest day, for reports (default 90; off: none)"),
            Option(
                name: "journal-segment-bytes", value: "BYTES",
                help: "ingest journal segment size; a segment is deleted once all its records are committed (default 67108864)"),
            Option(
                name: "recover-journal", value: nil,
                help: "start although the ingest journal is damaged: replay every intact record and log what was lost (command line only)"),
            Option(
                name: "rebuild-store", value: nil,
                help:
                    "start although the state store is missing, empty, unreadable or older than the journal: rebuild it from the journal and log what was lost (command line only)"
            ),
            Option(name: "config", value: "FILE", help: "read KEY = VALUE lines (same keys as the flags)"),
            Option(name: "check-config", value: nil, help: "check the configuration and rules, then exit 0 or 1"),
            Option(name: "help", value: nil, help: "show this help")
        ]

    /// The `--help` text.
    package static var usage: String {
        var s = """
            usage: mobilityd [options]

            Subscribes to samples on an MQTT broker, evaluates the rules, publishes alerts.
            Every option can also be given as MOBILITYD_<NAME> (e.g. MOBILITYD_BROKER) or in --config.

            options:

            """
        for o in options {
            let left = "  --\(o.name)" + (o.value.map { " \($0)" } ?? "")
            s += left.padding(toLength: max(left.count + 2, 34), withPad: " ", startingAt: 0) + o.help + "\n"
        }
        s += "\nsignals: SIGHUP reloads the rules (an invalid set is refused); SIGTERM drains, publishes offline, exits 0.\n"
        return s
    }

    /// A configuration problem (exit code 2).
    package struct Problem: Error, CustomStringConvertible {
        /// What is wrong, for the error message.
        package var description: String
    }

    /// Builds the configuration from arguments, environment and an optional file.
    package static func load(arguments: [String], environment: [String: String]) throws(Problem) -> DaemonConfiguration {
        var flags: [(String, String?)] = []
        var i = 0
        while i < arguments.count {
            let a = arguments[i]
            guard a.hasPrefix("--") else { throw Problem(description: "unexpected argument '\(a)'") }
            var name = String(a.dropFirst(2))
            var value: String?
            if let eq = name.firstIndex(of: "=") {
                value = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            guard let opt = options.first(where: { $0.name == name }) else { throw Problem(description: "unknown option --\(name)") }
            if name == "password" { throw Problem(description: passwordOnCommandLine) }
            if opt.value == nil, value != nil { throw Problem(description: "--\(name) takes no value") }
            if opt.value != nil, value == nil {
                i += 1
                guard i < arguments.count else { throw Problem(description: "--\(name) needs a value") }
                value = arguments[i]
            }
            flags.append((name, value))
            i += 1
        }
        var merged: [String: String] = [:]
        // The config file, named by flag or environment.
        let configPath = flags.last { $0.0 == "config" }?.1 ?? environment["MOBILITYD_CONFIG"]
        if let configPath {
            let (text, mode) = try readPrivate(configPath, what: "config file")
            for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let line = DaemonConfiguration.stripComment(raw).trimmingCharacters(in: .whitespaces)
                if line.isEmpty { continue }
                guard let eq = line.firstIndex(of: "=") else { throw Problem(description: "\(configPath):\(n + 1): expected KEY = VALUE") }
                let key = line[..<eq].trimmingCharacters(in: .whitespaces)
                guard options.contains(where: { $0.name == key && $0.value != nil && key != "config" }) else {
                    throw Problem(description: "\(configPath):\(n + 1): unknown key '\(key)'")
                }
                merged[key] = line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            }
            if merged["password"] != nil, mode & 0o077 != 0 { throw Problem(description: looseSecret(configPath, mode: mode, what: "config file")) }
        }
        for o in options where o.value != nil {
            let env = "MOBILITYD_" + o.name.uppercased().replacingOccurrences(of: "-", with: "_")
            if let v = environment[env] { merged[o.name] = v }
        }
        var c = DaemonConfiguration()
        for (name, value) in flags {
            if let value {
                merged[name] = value
            } else {
                switch name {
                case "help": c.help = true
                case "check-config": c.checkConfig = true
                case "recover-journal": c.recoverJournal = true
                case "rebuild-store": c.rebuildStore = true
                default: break
                }
            }
        }
        if let path = merged["password-file"] {
            let (text, mode) = try readPrivate(path, what: "password file")
            if mode & 0o077 != 0 { throw Problem(description: looseSecret(path, mode: mode, what: "password file")) }
            let secret = text.trimmingCharacters(in: .newlines)
            guard !secret.isEmpty else { throw Problem(description: "password file \(path) is empty") }
            guard !secret.contains(where: \.isNewline) else { throw Problem(description: "password file \(path) must hold one line, the password") }
            merged["password"] = secret
        }
        try c.apply(merged)
        try c.applyHTTP(merged)
        try c.applyCareTeams(merged)
        try c.applyFHIR(merged)
        try c.applyStore(merged, environment: environment)
        try c.applyPartitions(merged)
        if let problem = c.accountProblem { throw Problem(description: problem) }
        return c
    }

    static let passwordOnCommandLine = """
        --password is refused on the command line: every local user can read a process's arguments \
        (ps, /proc/PID/cmdline). Put the password in a file only mobilityd can read and pass \
        --password-file FILE (the shipped systemd unit passes a LoadCredential= credential), or set \
        'password = …' in the --config file (mode 0600), or MOBILITYD_PASSWORD
        """

    /// A file's text and permission bits.
    static func readPrivate(_ path: String, what: String) throws(Problem) -> (String, mode_t) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Problem(description: "cannot read \(what) \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { throw Problem(description: "\(what) \(path) is not a regular file") }
        guard st.st_size <= 1 << 20, let data = try? FileHandle(fileDescriptor: fd, closeOnDealloc: false).readToEnd() ?? Data(),
            let text = String(data: data, encoding: .utf8)
        else {
            throw Problem(description: "cannot read \(what) \(path): not UTF-8 text of at most 1 MiB")
        }
        return (text, st.st_mode & 0o7777)
    }

    static func looseSecret(_ path: String, mode: mode_t, what: String) -> String {
        let m = "0" + String(mode, radix: 8)
        return "\(what) \(path) holds the MQTT password but is accessible to group or others (mode \(m)); "
            + "run 'chmod 600 \(path)' (owned by the user mobilityd runs as), or keep the password in a --password-file of its own"
    }

    /// Applies options by name (the command line's and the configuration file's, without `--`).
    mutating func apply(_ m: [String: String]) throws(Problem) {
        try applyConnection(m)
        try applyRuntime(m)
        let tls = BrokerTLSFiles(caFile: caFile, certFile: certFile, keyFile: keyFile)
        if let url = brokers.first, let problem = tls.problem(for: url) { throw Problem(description: problem) }
    }

    /// A whole-number option within `range`, nil when it is not given.
    private static func int(_ m: [String: String], _ k: String, _ range: ClosedRange<Int>) throws(Problem) -> Int? {
        guard let v = m[k] else { return nil }
        guard let n = Int(v), range.contains(n) else {
            throw Problem(description: "--\(k) must be a whole number in \(range.lowerBound)...\(range.upperBound), not '\(v)'")
        }
        return n
    }

    /// The broker, the connections, the rules, the state and the topics.
    private mutating func applyConnection(_ m: [String: String]) throws(Problem) {
        if let v = m["broker"] {
            do { _ = try BrokerURL.list(parsing: v) } catch { throw Problem(description: error.description) }
            broker = v
        }
        if let v = m["rules"] { rules = v }
        if let v = m["state"] { state = v }
        if let v = m["clock"] {
            guard let c = ClockMode(rawValue: v) else { throw Problem(description: "--clock must be wall or event, not '\(v)'") }
            clock = c
        }
        if let v = m["instance"] {
            guard TopicLayout.isValidUser(v) else { throw Problem(description: "--instance must be 1-64 characters of A-Z a-z 0-9 _ -") }
            instance = v
        }
        if let v = m["client-id"] { clientID = v }
        if let v = m["username"] { username = v }
        if let v = m["publisher-username"] { publisherUsername = v }
        if let v = m["broker-binds-client-ids"] {
            guard v == "true" || v == "false" else { throw Problem(description: "--broker-binds-client-ids must be true or false") }
            brokerBindsClientIDs = v == "true"
        }
        if let v = m["password"] { password = v }
        if let v = m["ca-file"] { caFile = v }
        if let v = m["cert-file"] { certFile = v }
        if let v = m["key-file"] { keyFile = v }
        if let v = m["mqtt-version"] {
            guard let p = MQTTClientConfiguration.ProtocolVersion(option: v) else {
                throw Problem(description: "--mqtt-version must be 3.1.1 or 5")
            }
            mqttVersion = p
        }
        if let v = m["topic-root"] {
            guard !v.isEmpty, !v.contains("+"), !v.contains("#"), !v.hasSuffix("/") else {
                throw Problem(description: "--topic-root must be a topic without wildcards or a trailing /")
            }
            topicRoot = v
        }
    }

    /// Shards, queues, intervals, limits, listeners, logs and history.
    private mutating func applyRuntime(_ m: [String: String]) throws(Problem) {
        if let n = try Self.int(m, "shards", 1...256) { shards = n }
        if let n = try Self.int(m, "queue-capacity", 1...10_000_000) { queueCapacity = n }
        if let n = try Self.int(m, "ack-interval", 0...60_000) { ackIntervalMs = n }
        if let n = try Self.int(m, "commit-interval", 0...60_000) { commitIntervalMs = n }
        if let v = m["metrics-address"] {
            // /metrics and /healthz have neither TLS nor tokens: loopback only (docs/security.md).
            guard v == "off" || Self.isLoopback(v) else {
                throw Problem(
                    description: "--metrics-address '\(v)' is not a loopback address (127.0.0.0/8): /metrics and /healthz are plain HTTP "
                        + "without tokens; keep them on 127.0.0.1 and let a local agent or a TLS-terminating proxy reach them, or set off")
            }
            metricsAddress = v == "off" ? nil : v
        }
        if let v = m["log-format"] {
            guard let f = LogFormat(rawValue: v) else { throw Problem(description: "--log-format must be logfmt or json") }
            logFormat = f
        }
        if let v = m["log-level"] {
            guard let l = LogLevel(name: v) else { throw Problem(description: "--log-level must be debug, info, warn or error") }
            logLevel = l
        }
        if let v = m["time-zone"] {
            guard LocalCalendar(identifier: v) != nil else { throw Problem(description: "--time-zone '\(v)' is not an IANA zone") }
            timeZone = v
        }
        if let n = try Self.int(m, "grace", 0...86_400) { graceSeconds = Int64(n) }
        if let n = try Self.int(m, "lateness", 0...365) { latenessDays = Int64(n) }
        if let n = try Self.int(m, "max-future", 0...86_400 * 365) { maxFutureSeconds = Int64(n) }
        if let n = try Self.int(m, "max-event-age", 1...36_500) { maxEventAgeDays = n }
        if let n = try Self.int(m, "max-payload", 64...64 * 1024 * 1024) { maxPayloadBytes = n }
        if let n = try Self.int(m, "tick", 1...86_400) { tickSeconds = n }
        if let n = try Self.int(m, "stall-timeout", 1...3600) { stallTimeoutSeconds = n }
        if let n = try Self.int(m, "journal-segment-bytes", 4096...(1 << 30)) { journalSegmentBytes = n }
        if let v = m["publish-series"] {
            guard v == "true" || v == "false" else { throw Problem(description: "--publish-series must be true or false") }
            publishSeries = v == "true"
        }
        if m["history-days"] == "off" { historyDays = nil } else if let n = try Self.int(m, "history-days", 14...3660) { historyDays = n }
    }

    /// Why the two connections cannot both work, or nil. A broker that binds client ids to
    /// usernames (mosquitto's `use_username_as_clientid`, as `deploy/mosquitto.conf` sets it)
    /// gives both connections of one account the same client id: each connection evicts the other
    /// as it reconnects, and the publisher's clean session wipes the subscriber's persistent
    /// session, with every input queued in it — acknowledged to the gateways, delivered to no one.
    /// mobilityd cannot ask the broker, so one account for both is refused unless the operator
    /// states that the broker keeps client ids apart.
    var accountProblem: String? {
        guard let username, brokerBindsClientIDs, (publisherUsername ?? username) == username else { return nil }
        return """
            both MQTT connections would log in as '\(username)': a broker that binds client ids to usernames \
            (mosquitto's use_username_as_clientid, as deploy/mosquitto.conf does) gives them one client id, so \
            they evict each other and the publisher's clean session wipes the subscriber's session with the inputs \
            queued in it. Give the publisher an account of its own with --publisher-username (the shipped ACL has \
            mobilityd-pub), or, if the broker keeps client ids apart from usernames, say so with \
            --broker-binds-client-ids false
            """
    }

    /// The engine settings.
    package var engine: EngineConfiguration {
        var e = EngineConfiguration()
        e.graceSeconds = graceSeconds
        e.allowedLatenessSeconds = latenessDays * 86_400
        e.maxFutureSeconds = maxFutureSeconds  // in event mode against the wall clock (Ingestor.boundedByWallClock)
        e.maxEventAgeDays = maxEventAgeDays
        e.defaultCalendar = LocalCalendar(identifier: timeZone) ?? .utc
        e.publishSeries = publishSeries || historyDays != nil  // the history records series even when MQTT does not carry them
        return e
    }
}
