import Foundation
import MQTTTransport
import MobilityModel
import Synchronization

/// `mobilityctl silence add|query|expire`, like `amtool silence`: publishes a silence command on
/// `{root}/teams/{team}/commands/silence` (waiting for mobilityd's answer, ``command(_:_:_:_:_:id:listen:judge:done:)``), or lists
/// the team's retained `{root}/teams/{team}/silences/+`. Same broker options as `mobilityctl ack`.
enum SilenceCommandLine {
    static let usage = """
        usage: mobilityctl silence add --team T [MATCHER...] [--duration 2h|2d|90m | --end ISO] [--start ISO]
                                       --comment TEXT --author NAME BROKER-OPTIONS
               mobilityctl silence query [--team T] [--output table|json] BROKER-OPTIONS
               mobilityctl silence expire --team T --author NAME ID... BROKER-OPTIONS
          MATCHER: name=value, name!=value, name=~regex, name!~regex (name: user, rule, severity or a rule label)
          BROKER-OPTIONS: --broker URL [--credentials FILE --account NAME] [--ca-file F] [--cert-file F --key-file F]
                          [--mqtt-version 3.1.1|5] [--topic-root ROOT]
          add and expire wait (--wait SECONDS, default 10; 0: only for the broker) for mobilityd's answer:
          the retained silence (exit 0) or the refusal with its reason (exit 1)
        """

    struct Options {
        var team: String?, author: String?, comment: String?
        var duration: String?, end: String?, start: String?
        var output = "table"
        var broker = CommandBroker()
        var positional: [String] = []
        var root: String { broker.root }
    }

    static func run(_ args: [String]) -> Int32 {
        guard let sub = args.first, ["add", "query", "expire"].contains(sub) else {
            let got = args.first.map { "unknown subcommand '\($0.prefix(40))'; " } ?? ""
            fail("mobilityctl silence: \(got)expected add, query or expire\n\n" + usage)
        }
        let o = parse(Array(args.dropFirst()), sub)
        let access = o.broker.access("silence \(sub)")
        switch sub {
        case "add": return add(o, access)
        case "expire": return expire(o, access)
        default: return query(o, access)
        }
    }

    static func parse(_ args: [String], _ sub: String) -> Options {
        var o = Options()
        var i = 0
        func value() -> String {
            i += 1
            guard i < args.count else { fail("mobilityctl silence \(sub): \(args[i - 1]) needs a value\n\n" + usage) }
            return args[i]
        }
        while i < args.count {
            switch args[i] {
            case "--team": o.team = value()
            case "--author", "-a": o.author = value()
            case "--comment", "-c": o.comment = value()
            case "--duration", "-d": o.duration = value()
            case "--end": o.end = value()
            case "--start": o.start = value()
            case "--output", "-o": o.output = value()
            case let flag where o.broker.take(flag, command: "silence \(sub)", value: value): break
            case let a where a.hasPrefix("-"): fail("mobilityctl silence \(sub): unknown option '\(a)'\n\n" + usage)
            case let a: o.positional.append(a)
            }
            i += 1
        }
        guard o.broker.broker != nil else { fail("mobilityctl silence \(sub): --broker is required\n\n" + usage) }
        if let t = o.team, !AckCommandLine.isID(t) { fail("mobilityctl silence \(sub): --team is 1-64 of A-Z a-z 0-9 _ -") }
        if sub != "query", o.team == nil { fail("mobilityctl silence \(sub): --team is required (the team the silence is for)\n\n" + usage) }
        return o
    }

    /// `2h`, `90m`, `2d`, `1w`, `30s`, or combined `1d12h`, in seconds; nil when malformed.
    static func seconds(_ text: String) -> Int64? {
        var total: Int64 = 0, number: Int64 = 0, digits = 0
        for c in text {
            if let d = c.wholeNumberValue, c.isASCII {
                number = number * 10 + Int64(d)
                digits += 1
                guard digits <= 6 else { return nil }
                continue
            }
            guard digits > 0 else { return nil }
            switch c {
            case "s": total += number
            case "m": total += number * 60
            case "h": total += number * 3600
            case "d": total += number * 86_400
            case "w": total += number * 7 * 86_400
            default: return nil
            }
            number = 0
            digits = 0
        }
        return digits == 0 && total > 0 ? total : nil
    }

    static func add(_ o: Options, _ access: BrokerAccess) -> Int32 {
        let team = o.team!
        guard !o.positional.isEmpty else { fail("mobilityctl silence add: name at least one matcher (e.g. user=jamie rule=stalled_recovery)\n\n" + usage) }
        var matchers: [SilenceMatcher] = []
        for p in o.positional {
            switch SilenceMatcher.parse(p) {
            case .success(let m): matchers.append(m)
            case .failure(let e): fail("mobilityctl silence add: matcher '\(p.prefix(80))': \(e.description)")
            }
        }
        guard let author = o.broker.actor(o.author), !author.isEmpty else {
            fail("mobilityctl silence add: --author NAME is required (who silences)\n\n" + usage)
        }
        guard let comment = o.comment, !comment.isEmpty else { fail("mobilityctl silence add: --comment TEXT is required (why)\n\n" + usage) }
        let now = Timestamp(milliseconds: Int64(Date().timeIntervalSince1970 * 1000))
        var starts = now
        if let s = o.start {
            guard let t = ISO8601.parse(s)?.0 else { fail("mobilityctl silence add: --start is RFC 3339 with an offset, e.g. 2026-03-07T08:00:00Z") }
            starts = t
        }
        if o.duration != nil, o.end != nil { fail("mobilityctl silence add: give --duration or --end, not both") }
        let ends: Timestamp
        if let e = o.end {
            guard let t = ISO8601.parse(e)?.0 else { fail("mobilityctl silence add: --end is RFC 3339 with an offset, e.g. 2026-03-09T18:00:00Z") }
            ends = t
        } else {
            guard let d = seconds(o.duration ?? "1h") else { fail("mobilityctl silence add: --duration is like 90m, 2h, 2d or 1w") }
            ends = starts.adding(seconds: d)
        }
        let id = Silence.makeID(team: team, matchers: matchers, startsAt: starts, endsAt: ends, createdBy: author, comment: comment)
        let silence = Silence(id: id, team: team, matchers: matchers, startsAt: starts, endsAt: ends, createdBy: author, comment: comment)
        // The daemon checks the label names against its rules; the rest is checked here too.
        if let p = silence.validate(labelNames: Set(matchers.map(\.name)), now: now) { fail("mobilityctl silence add: \(p.message)") }
        var w = JSONWriter()
        w.beginObject()
        w.string("action", "add")
        w.beginArray("matchers")
        for m in matchers { m.write(into: &w) }
        w.endArray()
        w.string("startsAt", starts.description)
        w.string("endsAt", ends.description)
        w.string("createdBy", author)
        w.string("comment", comment)
        w.endObject()
        let topic = o.broker.commandTopic(team: team, "silence", by: author)
        let retained = "\(o.root)/teams/\(team)/silences/\(id)"
        return command(access, o, topic, w.text, "silence add", id: id, listen: retained) { p in
            guard let s = Silence.parse(p) else { return nil }
            return .accepted("silence \(s.id) for \(team) from \(s.startsAt) until \(s.endsAt)")
        } done: {
            print(id)
        }
    }

    static func expire(_ o: Options, _ access: BrokerAccess) -> Int32 {
        let team = o.team!
        guard !o.positional.isEmpty else { fail("mobilityctl silence expire: name the silence ids to expire\n\n" + usage) }
        guard let author = o.broker.actor(o.author), StaffText.isValid(author, maxBytes: Silence.maxCreatedByBytes, required: true) else {
            fail("mobilityctl silence expire: --author NAME is required (1-\(Silence.maxCreatedByBytes) bytes without control characters)\n\n" + usage)
        }
        for id in o.positional where !(id.utf8.count == 16 && id.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }) {
            fail("mobilityctl silence expire: '\(id.prefix(40))' is not a silence id (16 lower-case hex digits, as silence add and query print)")
        }
        let topic = o.broker.commandTopic(team: team, "silence", by: author)
        for id in o.positional {
            var w = JSONWriter()
            w.beginObject()
            w.string("action", "expire")
            w.string("id", id)
            w.string("by", author)
            w.endObject()
            let status = command(access, o, topic, w.text, "silence expire", id: id, listen: "\(o.root)/teams/\(team)/silences/\(id)") { p in
                p.isEmpty ? .accepted("silence \(id) of \(team) expired") : nil
            } done: {
            }
            if status != 0 { return status }
        }
        return 0
    }

    /// Sends a command and waits (`--wait`, default 10 s; 0: only for the broker) for mobilityd's
    /// answer: the silence's retained topic as `judge` wants it (exit 0, after `done`), or a
    /// refusal naming the silence on the team's `commands/rejected` (exit 1, with the reason).
    static func command(
        _ access: BrokerAccess, _ o: Options, _ topic: String, _ payload: String, _ what: String, id: String, listen: String,
        judge: @escaping @Sendable ([UInt8]) -> CommandAnswer?, done: () -> Void
    ) -> Int32 {
        let rejected = o.broker.rejectedTopic(team: o.team!)
        let outcome = o.broker.send(access, what: what, topic: topic, payload: Array(payload.utf8), listen: [rejected, listen]) { t, p in
            t == rejected ? CommandAnswer.refusal(p, command: "silence", key: "silence", value: id) : judge(p)
        }
        switch outcome {
        case .accepted(let text):
            done()
            writeErr("mobilityctl \(what): \(text)\n")
        case .sent: done()
        case .failed(let status): return status
        }
        return 0
    }

    static func query(_ o: Options, _ access: BrokerAccess) -> Int32 {
        guard o.output == "table" || o.output == "json" else { fail("mobilityctl silence query: --output is table or json") }
        guard o.positional.isEmpty else { fail("mobilityctl silence query: unexpected argument '\(o.positional[0].prefix(40))'\n\n" + usage) }
        let account = o.broker.login(access)
        var password: String?
        if let account {
            guard let p = access.credentials?.password(for: account) else { fail("mobilityctl silence query: the credentials file has no line for \(account)") }
            password = p
        }
        let clientID = "mobilityctl-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let barrier = "\(o.root)/ctl/\(account ?? "anonymous")/\(clientID)"
        var c = MQTTClientConfiguration(broker: access.broker, clientID: clientID)
        c.cleanSession = true
        c.sessionExpirySeconds = 0
        c.protocolVersion = access.protocolVersion
        c.subscriptions = ["\(o.root)/teams/\(o.team ?? "+")/silences/+", barrier]
        c.username = account
        c.password = password
        c.caFile = access.caFile
        c.certFile = access.certFile
        c.keyFile = access.keyFile
        let seen = Mutex<(silences: [String: [UInt8]], tokens: Set<String>)>(([:], []))
        let client: MQTTClient
        do {
            client = try MQTTClient(
                c,
                onMessage: { topic, payload in
                    seen.withLock { s in
                        if topic == barrier {
                            s.tokens.insert(String(decoding: payload, as: UTF8.self))
                        } else {
                            s.silences[topic] = payload.isEmpty ? nil : payload
                        }
                    }
                }, onEvent: { _ in })
            try client.start()
        } catch {
            writeErr("mobilityctl silence query: cannot connect to \(access.broker): \(error)\n")
            return 1
        }
        defer { client.stop() }
        let token = UUID().uuidString
        var deadline = Date().addingTimeInterval(10)
        while !client.isSubscribed, Date() < deadline { usleep(20_000) }
        guard client.isSubscribed, (try? client.publish(topic: barrier, token, qos: 1)) != nil else {
            writeErr("mobilityctl silence query: no subscription at \(access.broker) within 10 s (login refused or broker unreachable)\n")
            return 1
        }
        deadline = Date().addingTimeInterval(10)
        while !seen.withLock({ $0.tokens.contains(token) }), Date() < deadline { usleep(20_000) }
        guard seen.withLock({ $0.tokens.contains(token) }) else {
            writeErr("mobilityctl silence query: the broker did not return the barrier message on \(barrier); the account needs to read and write it\n")
            return 1
        }
        let now = Timestamp(milliseconds: Int64(Date().timeIntervalSince1970 * 1000))
        let silences = seen.withLock { $0.silences.values.compactMap { Silence.parse($0) } }.sorted { ($0.endsAt, $0.id) < ($1.endsAt, $1.id) }
        if o.output == "json" {
            for s in silences { print(TerminalText.json(s.json(state: s.state(at: now)))) }
            return 0
        }
        let header = ["ID", "TEAM", "STATE", "MATCHERS", "STARTS AT", "ENDS AT", "CREATED BY", "COMMENT"]
        let rows =
            [header]
            + silences.map {
                // Retained text, possibly from before control characters were refused: escaped.
                [$0.id, $0.team, $0.state(at: now).rawValue, $0.matchersText, $0.startsAt.description, $0.endsAt.description, $0.createdBy, $0.comment]
                    .map(TerminalText.escaped)
            }
        let widths = header.indices.map { c in rows.map { $0[c].count }.max() ?? 0 }
        for r in rows {
            print(r.indices.map { c in c == r.count - 1 ? r[c] : r[c].padding(toLength: widths[c], withPad: " ", startingAt: 0) }.joined(separator: "  "))
        }
        return 0
    }
}
