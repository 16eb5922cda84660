import Dispatch
import Foundation
import Glibc
import MQTTTransport
import MobilityModel
import MobilityWire
import Synchronization

/// `mobilityctl alerts`: what is firing now, read from the retained alert topics, as a table (or
/// JSON lines); with `--follow`, then every transition as it arrives until SIGINT or SIGTERM.
enum AlertsCommand {
    static let usage = """
        usage: mobilityctl alerts [--broker URL] [--credentials FILE [--account NAME]] [--ca-file FILE]
                                  [--cert-file FILE --key-file FILE] [--mqtt-version 3.1.1|5] [--topic-root ROOT]
                                  [--team TEAM] [--user USER] [--rule RULE] [--severity info|warning|critical]
                                  [--follow] [--output table|json]
        """

    /// What the command line asked for.
    struct Options {
        var broker = "mqtt://127.0.0.1:1883"
        /// `--credentials FILE` (`account password` lines, as every command's) and `--account`.
        var credentials: String?, account: String?
        /// The older spellings, kept as hidden aliases: `--username`, `--password-file`.
        var username: String?, passwordFile: String?
        var caFile: String?, certFile: String?, keyFile: String?
        var version = MQTTClientConfiguration.ProtocolVersion.v311
        var root = TopicLayout.defaultRoot
        var team: String?, user: String?, rule: String?
        var severity: Severity?
        var follow = false, json = false

        /// The alert filter subscribed to: one user's or rule's when named (narrower on the broker).
        var filter: String {
            (team.map { "\(root)/teams/\($0)/" } ?? "\(root)/") + "users/\(user ?? "+")/alerts/\(rule ?? "#")"
        }

        /// Whether a transition passes the filters. The topic already selects team, user and rule
        /// (team membership is the topic's: the daemon publishes under each team of the user);
        /// user and rule are checked again on the payload, severity only there.
        func admits(_ a: AlertTransition) -> Bool {
            (user == nil || a.user == user) && (rule == nil || a.rule == rule) && (severity == nil || a.severity == severity)
        }

        /// The team's index of silences, which mobilityd keeps retained for each team it knows.
        var teamIndex: String? { team.map { "\(root)/teams/\($0)/silences" } }

        /// The silences readable for the alerts: the team's, or every team's the account may read.
        var silenceFilter: String { "\(root)/teams/\(team ?? "+")/silences/+" }

        /// The silences in force for `a` at `now`: those whose id the payload lists (the daemon
        /// marks a transition evaluated under a silence) and, as a silence added later does not
        /// change the retained payload, those that match it now: with `--team`, any of the team's;
        /// without, one that names the user (a silence applies to its team's users only, and the
        /// user topic does not say which teams the user is in). Only silences still published
        /// (retained) count: an expired silence is cleared.
        func holding(_ a: AlertTransition, _ silences: [Silence], now: Timestamp) -> [Silence] {
            silences.filter { s in
                guard s.state(at: now) == .active else { return false }
                if a.silencedBy?.contains(s.id) == true { return true }
                let inScope =
                    team.map { s.team == $0 }
                    ?? s.matchers.contains { $0.name == "user" && $0.isEqual && !$0.isRegex && $0.value == a.user }
                return inScope && s.matches(user: a.user, rule: a.rule, severity: a.severity, labels: a.labels)
            }
        }
    }

    static func parse(_ args: [String]) -> Options {
        var o = Options()
        var i = 0
        func value() -> String {
            i += 1
            guard i < args.count, !args[i].hasPrefix("--") else { fail("mobilityctl alerts: \(args[i - 1]) needs a value\n" + usage) }
            return args[i]
        }
        func level(_ flag: String) -> String {
            let v = value()
            guard !v.isEmpty, !v.contains("/"), !v.contains("+"), !v.contains("#") else {
                fail("mobilityctl alerts: \(flag) '\(v)' must be one topic level (no /, + or #)")
            }
            return v
        }
        while i < args.count {
            switch args[i] {
            case "--broker": o.broker = value()
            case "--credentials": o.credentials = value()
            case "--account": o.account = value()
            case "--username": o.username = value()
            case "--password-file": o.passwordFile = value()
            case "--password":
                fail(
                    "mobilityctl alerts: --password is refused on the command line (every local user can read a process's arguments); "
                        + "put an 'account password' line in a file of mode 0600 and pass --credentials FILE --account NAME")
            case "--ca-file": o.caFile = value()
            case "--cert-file": o.certFile = value()
            case "--key-file": o.keyFile = value()
            case "--mqtt-version":
                let v = value()
                guard let p = MQTTClientConfiguration.ProtocolVersion(option: v) else {
                    fail("mobilityctl alerts: --mqtt-version must be 3.1.1 or 5, not '\(v)'")
                }
                o.version = p
            case "--topic-root":
                let v = value()
                guard !v.contains("+"), !v.contains("#"), !v.hasSuffix("/") else {
                    fail("mobilityctl alerts: --topic-root must be a topic without wildcards or a trailing /")
                }
                o.root = v
            case "--team": o.team = level("--team")
            case "--user": o.user = level("--user")
            case "--rule": o.rule = level("--rule")
            case "--severity":
                let v = value()
                guard let s = Severity(rawValue: v) else { fail("mobilityctl alerts: --severity must be info, warning or critical, not '\(v)'") }
                o.severity = s
            case "--follow", "-f": o.follow = true
            case "--output", "-o":
                let v = value()
                guard v == "table" || v == "json" else { fail("mobilityctl alerts: --output must be table or json, not '\(v)'") }
                o.json = v == "json"
            case "-h", "--help": print(usage); exit(0)
            default: fail("mobilityctl alerts: unknown argument \(args[i])\n" + usage)
            }
            i += 1
        }
        if o.passwordFile != nil, o.username == nil { fail("mobilityctl alerts: --password-file needs --username") }
        if o.credentials != nil || o.account != nil, o.username != nil || o.passwordFile != nil {
            fail("mobilityctl alerts: give --credentials FILE --account NAME, or the older --username/--password-file, not both")
        }
        if o.account != nil, o.credentials == nil { fail("mobilityctl alerts: --account needs --credentials FILE (its 'account password' lines)") }
        return o
    }

    static func run(_ args: [String]) -> Int32 {
        let o = parse(args)
        let broker: BrokerURL
        do { broker = try BrokerURL(parsing: o.broker) } catch { fail("mobilityctl alerts: \(error)") }
        if let problem = BrokerTLSFiles(caFile: o.caFile, certFile: o.certFile, keyFile: o.keyFile).problem(for: broker) {
            fail("mobilityctl alerts: \(problem)")
        }
        var password: String?, username = o.username
        if let path = o.passwordFile {
            switch PasswordFile.read(path) {
            case .success(let p): password = p
            case .failure(let e): fail("mobilityctl alerts: \(e.description)")
            }
        }
        if let path = o.credentials {
            let account = o.account ?? CommandBroker().account
            do {
                guard let p = try BrokerCredentials.load(path).password(for: account) else {
                    fail("mobilityctl alerts: the credentials file \(path) has no line for \(account)")
                }
                (username, password) = (account, p)
            } catch { fail("mobilityctl alerts: \(error.description)") }
        }

        let clientID = "mobilityctl-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let barrierTopic = "\(o.root)/ctl/\(username ?? "anonymous")/\(clientID)"
        var c = MQTTClientConfiguration(broker: broker, clientID: clientID)
        c.cleanSession = true
        c.sessionExpirySeconds = 0
        c.protocolVersion = o.version
        c.subscriptions = [o.filter, o.silenceFilter, barrierTopic] + (o.teamIndex.map { [$0] } ?? [])
        c.username = username
        c.password = password
        c.caFile = o.caFile
        c.certFile = o.certFile
        c.keyFile = o.keyFile
        c.reconnectMaxSeconds = 10
        let feed = AlertFeed(barrierTopic: barrierTopic, teamIndex: o.teamIndex)
        let client: MQTTClient
        do {
            client = try MQTTClient(c, onMessage: { feed.received($0, $1) }, onEvent: { feed.event($0) })
            try client.start()
        } catch {
            writeErr("mobilityctl alerts: cannot connect to \(broker): \(error)\n")
            return 1
        }
        defer { client.stop() }
        let who = username.map { " as \($0)" } ?? ""

        // Connected and subscribed, or a clear reason why not.
        switch feed.awaitSubscribed(timeout: 10, client: client) {
        case .ready: break
        case .refused(let why):
            writeErr("mobilityctl alerts: the broker at \(broker) refused the login\(who): \(why)\n")
            return 1
        case .failed(let why):
            writeErr("mobilityctl alerts: cannot connect to \(broker)\(who): \(why)\n")
            return 1
        }
        // The barrier: every retained message queued by the SUBSCRIBE arrives before it.
        let token = UUID().uuidString
        do { try client.publish(topic: barrierTopic, token, qos: 1) } catch {
            writeErr("mobilityctl alerts: cannot publish the barrier message to \(broker): \(error)\n")
            return 1
        }
        guard feed.awaitBarrier(token, timeout: 10) else {
            writeErr(
                "mobilityctl alerts: the broker at \(broker) did not return the barrier message on \(barrierTopic) within 10 s; "
                    + "the account\(who) needs to read and write that topic (see docs/operations.md, \"Looking at alerts\")\n")
            return 1
        }

        // A team is known when its index came before the barrier: mosquitto answers a subscription
        // its ACL denies as granted and then delivers nothing, so an empty table would say
        // "nothing firing" of a team the account may not read, or that does not exist.
        if let team = o.team, !feed.teamIndexSeen() {
            writeErr(
                "mobilityctl alerts: no team '\(team)' to show: mobilityd knows no such team (check the spelling), or "
                    + (username.map { "the account \($0)" } ?? "an anonymous login") + " may not read its topics (\(o.teamIndex!) and \(o.filter))\n")
            return 1
        }
        for note in feed.notes() { writeErr("mobilityctl alerts: \(TerminalText.escaped(note))\n") }
        // Without --team an account reads every user's topics; the shipped ACL gives a team
        // account its team's topics only and mosquitto drops the rest silently, so nothing at all
        // may be a denial rather than a quiet ward: say what a team account needs.
        if let username, o.team == nil, feed.snapshot().isEmpty, feed.silences().isEmpty {
            writeErr(
                "mobilityctl alerts: nothing arrived on \(o.filter) for the account \(username); "
                    + "a team account may read only its team's topics: give --team TEAM\n")
        }
        let colour = isatty(1) == 1 && ProcessInfo.processInfo.environment["NO_COLOR"] == nil
        let printer = AlertTable(colour: colour, width: terminalWidth())
        let retained = feed.snapshot().filter { o.admits($0.1) }
        let firing = retained.filter { $0.1.status == .firing }
        if o.json {
            write(firing.sorted { $0.1.id < $1.1.id }.map { line(raw: $0.0, $0.1) }.joined())
        } else {
            let silences = feed.silences(), now = AlertsCommand.wallClock()
            write(printer.table(firing.map(\.1)) { o.holding($0, silences, now: now) })
        }
        guard o.follow else { return 0 }

        // Follow: the network thread queues, this thread prints; SIGINT/SIGTERM end it (exit 0).
        let stop = Atomic<Bool>(false)
        var sources: [DispatchSourceSignal] = []
        for s in [SIGINT, SIGTERM] {
            signal(s, SIG_IGN)
            let src = DispatchSource.makeSignalSource(signal: s, queue: .global())
            src.setEventHandler {
                stop.store(true, ordering: .sequentiallyConsistent); feed.wake()
            }
            src.resume()
            sources.append(src)
        }
        writeErr("mobilityctl alerts: \(firing.count) firing; following \(o.filter) (Ctrl-C to stop)\n")
        // Each instance's last message, and the silences that held each firing one.
        var known: [String: AlertTransition] = [:]
        var held: [String: Set<String>] = [:]
        for (_, a) in retained { known[a.id] = a }
        let start = feed.silences(), startTime = AlertsCommand.wallClock()
        for a in known.values where a.status == .firing { held[a.id] = Set(o.holding(a, start, now: startTime).map(\.id)) }
        while !stop.load(ordering: .sequentiallyConsistent) {
            let (alerts, silencesChanged) = feed.next()
            let silences = feed.silences(), now = AlertsCommand.wallClock()
            for (raw, a) in alerts where o.admits(a) {
                if o.json {
                    write(line(raw: raw, a))
                } else if let e = AlertEvent.of(a, after: known[a.id]) {
                    write(printer.line(e, a) + "\n")
                }
                known[a.id] = a
                held[a.id] = a.status == .firing ? Set(o.holding(a, silences, now: now).map(\.id)) : nil
            }
            if silencesChanged, !o.json {
                for a in AlertTable.sorted(known.values.filter { $0.status == .firing }) {
                    let holding = o.holding(a, silences, now: now), before = held[a.id] ?? []
                    if before.isEmpty, let s = holding.max(by: { ($0.endsAt, $0.id) < ($1.endsAt, $1.id) }) {
                        write(printer.line(.silenced(s), a) + "\n")
                    } else if !before.isEmpty, holding.isEmpty {
                        write(printer.line(.unsilenced(at: now), a) + "\n")
                    }
                    held[a.id] = Set(holding.map(\.id))
                }
            }
            for note in feed.notes() { writeErr("mobilityctl alerts: \(TerminalText.escaped(note))\n") }
            // Without --team an account reads every user's topics; the shipped ACL gives a team
            // account its team's topics only and mosquitto drops the rest silently, so nothing at all
            // may be a denial rather than a quiet ward: say what a team account needs.
            if let username, o.team == nil, feed.snapshot().isEmpty, feed.silences().isEmpty {
                writeErr(
                    "mobilityctl alerts: nothing arrived on \(o.filter) for the account \(username); "
                        + "a team account may read only its team's topics: give --team TEAM\n")
            }
        }
        sources.forEach { $0.cancel() }
        return 0
    }

    /// The payload as published, one line (re-encoded only if it held a line break or another
    /// control byte), with control characters in its strings as JSON escapes (``TerminalText``).
    static func line(raw: [UInt8], _ a: AlertTransition) -> String {
        TerminalText.json(raw.contains { $0 < 0x20 } ? a.json : String(decoding: raw, as: UTF8.self)) + "\n"
    }

    static func write(_ s: String) { FileHandle.standardOutput.write(Data(s.utf8)) }

    /// The wall clock (which silences are in force).
    static func wallClock() -> Timestamp { Timestamp(milliseconds: Int64(Date().timeIntervalSince1970 * 1000)) }

    /// The terminal's width when stdout is one, else `COLUMNS`, else nil (no cutting).
    static func terminalWidth() -> Int? {
        var w = winsize()
        if isatty(1) == 1, ioctl(1, UInt(TIOCGWINSZ), &w) == 0, w.ws_col > 0 { return Int(w.ws_col) }
        return ProcessInfo.processInfo.environment["COLUMNS"].flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil }
    }
}

/// What the network thread hands to the command: the retained alerts until the barrier, then
/// each transition in order, and connection notes.
final class AlertFeed: Sendable {
    enum Readiness { case ready, refused(String), failed(String) }

    private struct State {
        /// Before the barrier: the retained alert of each topic (clears remove it).
        var retained: [String: ([UInt8], AlertTransition)] = [:]
        var barrierTokens: Set<String> = []
        var following = false
        /// After the barrier: transitions not printed yet.
        var queue: [([UInt8], AlertTransition)] = []
        /// The last payload per topic, so that a reconnect's retained burst is not printed twice.
        var last: [String: [UInt8]] = [:]
        /// The retained silences by topic (cleared ones removed), before and after the barrier.
        var silences: [String: Silence] = [:]
        /// After the barrier: whether a silence came or went since the last ``next()``.
        var silencesChanged = false
        /// Whether the team's index arrived.
        var teamIndexSeen = false
        var notes: [String] = []
        var refusal: String?
        var problem: String?
        var malformed = 0
    }
    private let state = Mutex(State())
    private let signal = DispatchSemaphore(value: 0)
    private let barrierTopic: String
    private let teamIndex: String?
    /// Malformed payloads are named (topic only) up to this many times, then only counted.
    static let maxMalformedNoted = 20

    init(barrierTopic: String, teamIndex: String?) {
        self.barrierTopic = barrierTopic
        self.teamIndex = teamIndex
    }

    /// Whether `topic` is a retained silence's (`{root}/teams/{team}/silences/{id}`).
    static func isSilence(_ topic: String) -> Bool {
        let parts = topic.split(separator: "/", omittingEmptySubsequences: false)
        return parts.count >= 4 && parts[parts.count - 2] == "silences" && parts[parts.count - 4] == "teams"
    }

    /// A message (network thread): copied in, never blocking.
    func received(_ topic: String, _ payload: [UInt8]) {
        if topic == barrierTopic {
            state.withLock { _ = $0.barrierTokens.insert(String(decoding: payload, as: UTF8.self)) }
            signal.signal()
            return
        }
        if topic == teamIndex {
            state.withLock { $0.teamIndexSeen = !payload.isEmpty }
            return
        }
        if AlertFeed.isSilence(topic) {
            let silence = payload.isEmpty ? nil : Silence.parse(payload)
            state.withLock { s in
                s.silences[topic] = silence
                if s.following { s.silencesChanged = true }
                if !payload.isEmpty, silence == nil { s.notes.append("ignoring a payload on \(topic) that is not a silence") }
            }
            signal.signal()
            return
        }
        let parsed = payload.isEmpty ? nil : AlertTransition.parse(payload)
        state.withLock { s in
            if !s.following {
                if let parsed { s.retained[topic] = (payload, parsed) } else { s.retained[topic] = nil }
            } else if !payload.isEmpty, s.last[topic] != payload {
                if let parsed { s.queue.append((payload, parsed)) }
            }
            if payload.isEmpty { s.last[topic] = nil } else { s.last[topic] = payload }
            if !payload.isEmpty, parsed == nil {
                s.malformed += 1
                if s.malformed <= AlertFeed.maxMalformedNoted { s.notes.append("ignoring a payload on \(topic) that is not an alert transition") }
            }
        }
        signal.signal()
    }

    /// A connection event (network thread).
    func event(_ e: MQTTConnectionEvent) {
        state.withLock { s in
            switch e {
            case .refused(let error): s.refusal = error.message
            case .disconnected(let reason):
                s.problem = reason
                if s.following { s.notes.append("connection lost: \(reason); reconnecting") }
            case .connected, .subscribed: break
            }
        }
        signal.signal()
    }

    /// Waits until the subscriptions are answered, the login is refused, or the first connection
    /// fails (an unreachable broker is reported at once, not retried).
    func awaitSubscribed(timeout: TimeInterval, client: MQTTClient) -> Readiness {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if client.isSubscribed { return .ready }
            let (refusal, problem) = state.withLock { ($0.refusal, $0.problem) }
            if let refusal { return .refused(refusal) }
            if let problem, !client.isConnected { return .failed(problem) }
            guard Date() < deadline else { return .failed("no answer within \(Int(timeout)) s") }
            _ = signal.wait(timeout: .now() + 0.05)
        }
    }

    /// Waits for the barrier message with `token`; from then on transitions are queued for ``next()``.
    func awaitBarrier(_ token: String, timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let seen = state.withLock { s in
                guard s.barrierTokens.contains(token) else { return false }
                s.following = true
                return true
            }
            if seen { return true }
            _ = signal.wait(timeout: .now() + 0.05)
        }
        return false
    }

    /// The retained alerts that arrived before the barrier, with their payloads.
    func snapshot() -> [([UInt8], AlertTransition)] { state.withLock { Array($0.retained.values) } }

    /// Whether the team's index is published (the team exists and the account may read it).
    func teamIndexSeen() -> Bool { state.withLock { $0.teamIndexSeen } }

    /// The silences published now.
    func silences() -> [Silence] { state.withLock { Array($0.silences.values) } }

    /// Waits for something to happen (a message, an event, ``wake()``); returns the transitions
    /// queued and whether the silences changed.
    func next() -> (alerts: [([UInt8], AlertTransition)], silencesChanged: Bool) {
        signal.wait()
        return state.withLock { s in
            defer {
                s.queue.removeAll()
                s.silencesChanged = false
            }
            return (s.queue, s.silencesChanged)
        }
    }

    /// Notes for stderr since the last call.
    func notes() -> [String] {
        state.withLock { s in
            defer { s.notes.removeAll() }; return s.notes
        }
    }

    /// Wakes ``next()`` (a signal arrived).
    func wake() { signal.signal() }
}
