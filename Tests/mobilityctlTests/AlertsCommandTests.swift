import Foundation
import Glibc
import MobilityModel
import TestSupport
import Testing

/// `mobilityctl alerts`, the built executable, against a real mosquitto holding retained alerts
/// published here: the table, the filters, JSON lines, `--follow` piped and in a tmux terminal,
/// and bad arguments.
@Suite(.serialized) struct AlertsCommandTests {
    struct Run { var status: Int32; var stdout: String; var stderr: String }

    static let exe = ChildProcess.product("mobilityctl")

    /// Runs `mobilityctl alerts …` with stdout and stderr piped (not a terminal).
    static func alerts(_ args: [String], environment: [String: String] = [:]) throws -> Run {
        guard FileManager.default.isExecutableFile(atPath: exe) else { throw HarnessError("\(exe) is not built; run 'swift build' first") }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exe)
        p.arguments = ["alerts"] + args
        var env = ProcessInfo.processInfo.environment
        env["COLUMNS"] = nil
        for (k, v) in environment { env[k] = v }
        p.environment = env
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return Run(status: p.terminationStatus, stdout: String(decoding: o, as: UTF8.self), stderr: String(decoding: e, as: UTF8.self))
    }

    static func transition(
        _ rule: String, _ user: String, _ severity: Severity, status: AlertStatus = .firing, day: Int = 5,
        headline: String? = nil
    ) -> AlertTransition {
        let since = Timestamp(seconds: 1_772_524_800 + Int64(day) * 86_400)
        return AlertTransition(
            id: AlertTransition.stableID(rule: rule, user: user, activeSince: since), rule: rule, user: user,
            severity: severity, status: status, activeSince: since, firedAt: Timestamp(seconds: since.milliseconds / 1000 + 3600),
            resolvedAt: status == .resolved ? Timestamp(seconds: since.milliseconds / 1000 + 7200) : nil,
            day: CivilDate(year: 2026, month: 3, day: day), headline: headline ?? "\(rule) of \(user)",
            labels: [("team", "physio-north")], evidence: [Evidence(name: "recent", value: 0.99, unit: "m/s")], annotations: [])
    }

    /// The silence the seeded broker holds, in force for a day from now.
    static let silence: Silence = {
        let now = Timestamp(milliseconds: Int64(Date().timeIntervalSince1970 * 1000))
        guard case .success(let user) = SilenceMatcher.parse("user=alex") else { preconditionFailure("user=alex is a matcher") }
        return Silence(
            id: "4f1c2e9a0b7d3e21", team: "physio-north", matchers: [user], startsAt: now.adding(seconds: -60), endsAt: now.adding(seconds: 86_400),
            createdBy: "dr.lee", comment: "in hospital")
    }()

    /// The firing alerts the seeded broker holds: one acknowledged, one silenced, one neither.
    static var firing: [AlertTransition] {
        var acked = transition("stalled_recovery", "jamie", .warning), silenced = transition("fall_risk", "alex", .critical)
        acked.acknowledged = AlertAcknowledgement(by: "nurse.kim", at: Timestamp(seconds: 1_772_600_000), note: nil)
        silenced.silencedBy = ["4f1c2e9a0b7d3e21"]
        return [acked, silenced, transition("low_activity", "sam", .info)]
    }

    /// A broker holding: three firing alerts, one fired and cleared again, one malformed payload,
    /// and one firing under a team prefix.
    static func seededBroker() throws -> (MosquittoBroker, MQTTRecorder) {
        let broker = try MosquittoBroker()
        let pub = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/#"])
        func retain(_ topic: String, _ payload: String) throws {
            let answer = try pub.publishAwaitingAnswer(topic, payload, retain: true)
            try #require(answer == 0, "no PUBACK for \(topic)")
        }
        for t in firing + [
            transition("low_activity", "jamie", .warning)
        ] {
            try retain("mobility/v1/users/\(t.user)/alerts/\(t.rule)", t.json)
        }
        try retain("mobility/v1/users/jamie/alerts/low_activity", "")  // resolved: the retained message is cleared
        try retain("mobility/v1/users/kim/alerts/broken", "{\"not\": \"an alert\"}")
        try retain("mobility/v1/teams/physio-north/silences/\(silence.id)", silence.json(state: .active))
        try retain("mobility/v1/teams/physio-north/silences", "{\"team\":\"physio-north\",\"silences\":[\"\(silence.id)\"]}")
        let team = transition("gait_quality", "robin", .critical)
        try retain("mobility/v1/teams/physio-north/users/robin/alerts/gait_quality", team.json)
        return (broker, pub)
    }

    static func rows(_ table: String) -> [[String]] {
        table.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
    }

    /// The table's rows as cells, cut where the header's columns start (cells may hold spaces).
    static func cells(_ table: String) -> [[String: String]] {
        let lines = table.split(separator: "\n").map { Array($0) }
        guard let header = lines.first else { return [] }
        var starts: [(String, Int)] = []
        for name in AlertsCommandTests.header {
            guard let r = String(header).range(of: name) else { return [] }
            starts.append((name, String(header).distance(from: String(header).startIndex, to: r.lowerBound)))
        }
        return lines.dropFirst().map { line in
            var row: [String: String] = [:]
            for (k, (name, start)) in starts.enumerated() {
                let end = k + 1 < starts.count ? starts[k + 1].1 : line.count
                row[name] = start < line.count ? String(line[start..<min(end, line.count)]).trimmingCharacters(in: .whitespaces) : ""
            }
            return row
        }
    }
    /// How the table and --follow write a member of staff's instants: to the minute, UTC.
    static func minute(_ t: Timestamp) -> String {
        let iso = t.description
        return "\(iso.prefix(10)) \(iso.dropFirst(11).prefix(5))Z"
    }
    static let header = ["ID", "RULE", "USER", "SEVERITY", "STATE", "SINCE", "FIRED", "HEADLINE"]

    @Test func theTableListsExactlyTheFiringOnesMostSevereFirst() throws {
        let (broker, _) = try Self.seededBroker()
        let r = try Self.alerts(["--broker", broker.url])
        #expect(r.status == 0, "\(r.stderr)")
        let rows = Self.cells(r.stdout)
        #expect(Self.rows(r.stdout).first == Self.header)
        #expect(
            rows.map { [$0["RULE"]!, $0["USER"]!, $0["SEVERITY"]!] } == [
                ["fall_risk", "alex", "critical"], ["stalled_recovery", "jamie", "warning"], ["low_activity", "sam", "info"]
            ])
        // The id mobilityctl ack takes; who silenced it until when, who acknowledged it.
        #expect(rows.map { $0["ID"]! } == [Self.firing[1].id, Self.firing[0].id, Self.firing[2].id])
        #expect(rows.map { $0["STATE"]! } == ["silenced by dr.lee until \(Self.minute(Self.silence.endsAt))", "acked by nurse.kim", "firing"])
        // The user's local days, as every other view shows them (not the instants of the payload).
        let fall = Self.transition("fall_risk", "alex", .critical)
        #expect(rows.first?["SINCE"] == fall.activeSinceDay.description && rows.first?["FIRED"] == fall.firedDay.description)
        #expect(!r.stdout.contains("\u{1B}"), "no colour when piped")
        #expect(!r.stdout.contains("robin"), "team topics only with --team")
        #expect(r.stderr.contains("mobility/v1/users/kim/alerts/broken") && r.stderr.contains("not an alert transition"))
    }

    @Test(arguments: [
        (["--user", "jamie"], ["stalled_recovery"]),
        (["--rule", "low_activity"], ["low_activity"]),
        (["--severity", "critical"], ["fall_risk"]),
        (["--severity", "warning", "--user", "alex"], []),
        (["--team", "physio-north"], ["gait_quality"])
    ])
    func filters(_ args: [String], _ rules: [String]) throws {
        let (broker, _) = try Self.seededBroker()
        let r = try Self.alerts(["--broker", broker.url] + args)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(Self.cells(r.stdout).map { $0["RULE"]! } == rules)
    }

    /// A team mobilityd does not announce (misspelt, or one the account may not read: mosquitto
    /// grants the subscription and delivers nothing) is an error, not an empty table.
    @Test func anUnknownTeamIsAnErrorNotAnEmptyTable() throws {
        let (broker, _) = try Self.seededBroker()
        let r = try Self.alerts(["--broker", broker.url, "--team", "physio-nrth"])
        #expect(r.status == 1, "\(r.stdout)")
        #expect(r.stdout.isEmpty)
        #expect(r.stderr.contains("no team 'physio-nrth' to show: mobilityd knows no such team (check the spelling)"), "\(r.stderr)")
    }

    /// A silence added after the alert fired does not change its retained payload: the table
    /// matches the team's silences itself.
    @Test func aSilenceAddedAfterTheFiringShowsAsSilenced() throws {
        let (broker, pub) = try Self.seededBroker()
        var later = Self.silence
        later.id = "0123456789abcdef"
        later.matchers = [try SilenceMatcher(name: "rule", value: "gait_.*", isRegex: true)]
        later.createdBy = "nurse.kim"
        _ = try pub.publishAwaitingAnswer("mobility/v1/teams/physio-north/silences/\(later.id)", later.json(state: .active), retain: true)
        let r = try Self.alerts(["--broker", broker.url, "--team", "physio-north"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(Self.cells(r.stdout).map { $0["STATE"]! } == ["silenced by nurse.kim until \(Self.minute(later.endsAt))"], "\(r.stdout)")
        // Without --team, a silence counts for a user's alert only when it names the user (the
        // user topic does not say which teams the user is in).
        let all = try Self.alerts(["--broker", broker.url])
        #expect(Self.cells(all.stdout).map { $0["STATE"]! } == ["silenced by dr.lee until \(Self.minute(Self.silence.endsAt))", "acked by nurse.kim", "firing"])
    }

    @Test func jsonLinesAreThePayloadsAsPublished() throws {
        let (broker, _) = try Self.seededBroker()
        let r = try Self.alerts(["--broker", broker.url, "--output", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(Set(lines) == Set(Self.firing.map(\.json)))
        #expect(lines.count == 3)
        for l in lines { #expect(AlertTransition.parse(Array(l.utf8)) != nil) }
    }

    @Test func summariesAreCutToTheWidth() throws {
        let broker = try MosquittoBroker()
        let pub = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/#"])
        let long = Self.transition("stalled_recovery", "jamie", .warning, headline: String(repeating: "slow walking ", count: 20))
        _ = try pub.publishAwaitingAnswer("mobility/v1/users/jamie/alerts/stalled_recovery", long.json, retain: true)
        let r = try Self.alerts(["--broker", broker.url], environment: ["COLUMNS": "100"])
        #expect(r.status == 0, "\(r.stderr)")
        let row = try #require(r.stdout.split(separator: "\n").last)
        #expect(row.count == 100 && row.hasSuffix("…"), "\(row)")
        let wide = try Self.alerts(["--broker", broker.url])
        #expect(wide.stdout.contains(long.headline), "not cut when piped without COLUMNS")
    }

    /// `--follow` piped: a transition published after start is printed, plain; SIGINT exits 0.
    @Test func followPrintsTransitionsAsTheyArrive() throws {
        let (broker, pub) = try Self.seededBroker()
        let p = try ChildProcess(Self.exe, ["alerts", "--broker", broker.url, "--follow", "--user", "alex"])
        defer { p.stop(signal: SIGKILL) }
        try #require(eventually { p.log.contains("following") }, "\(p.log)")
        let fired = Self.transition("fall_risk", "alex", .critical, day: 9, headline: "a fresh fall risk")
        try pub.publish("mobility/v1/users/alex/alerts/fall_risk", fired.json, retain: true)
        try pub.publish("mobility/v1/users/jamie/alerts/stalled_recovery", Self.transition("stalled_recovery", "jamie", .critical).json)
        let resolved = Self.transition("fall_risk", "alex", .critical, status: .resolved, day: 9, headline: "resolved now")
        try pub.publish("mobility/v1/users/alex/alerts/fall_risk", resolved.json)
        try #require(eventually { p.log.contains("resolved now") }, "\(p.log)")
        let lines = p.log.split(separator: "\n").filter { $0.contains("fall_risk") }
        #expect(lines.count == 3, "the table row, the firing and the resolution: \(p.log)")
        #expect(lines.contains { $0.contains("firing") && $0.contains("a fresh fall risk") && $0.hasPrefix(fired.firedDay.description) })
        #expect(lines.contains { $0.contains("resolved") && $0.hasPrefix(resolved.endedDay!.description) })
        #expect(!p.log.contains("jamie"), "filtered out")
        #expect(!p.log.contains("\u{1B}"))
        #expect(p.stop(signal: SIGINT) == 0)
    }

    /// `--follow` says what happened to an instance: an acknowledgement (republished on the
    /// retained topic) is "acknowledged by", a reminder is dated on its own day, a silence that
    /// comes and goes is "silenced" and "unsilenced", the resolution "resolved"; none of them is a
    /// second "firing" line.
    @Test func followPrintsWhatHappened() throws {
        let broker = try MosquittoBroker()
        let pub = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/#"])
        let fired = Self.transition("stalled_recovery", "jamie", .warning)
        let topic = "mobility/v1/users/jamie/alerts/stalled_recovery"
        _ = try pub.publishAwaitingAnswer(topic, fired.json, retain: true)
        let p = try ChildProcess(Self.exe, ["alerts", "--broker", broker.url, "--follow"])
        defer { p.stop(signal: SIGKILL) }
        try #require(eventually { p.log.contains("1 firing; following") }, "\(p.log)")
        func events() -> [Substring] { p.log.split(separator: "\n").filter { $0.contains(fired.id) }.dropFirst().map { $0 } }

        var acked = fired
        acked.acknowledged = AlertAcknowledgement(by: "nurse.kim", at: Timestamp(seconds: 1_772_900_000), note: "called Jamie")
        try pub.publish(topic, acked.json, retain: true)
        try #require(eventually { events().count == 1 }, "\(p.log)")
        var reminder = acked
        reminder.isRepeat = true
        reminder.day = CivilDate(year: 2026, month: 3, day: 12)
        try pub.publish(topic, reminder.json, retain: true)
        try #require(eventually { events().count == 2 }, "\(p.log)")
        var silence = Self.silence
        guard case .success(let jamie) = SilenceMatcher.parse("user=jamie") else { Issue.record("user=jamie"); return }
        silence.matchers = [jamie]
        try pub.publish("mobility/v1/teams/physio-north/silences/\(silence.id)", silence.json(state: .active), retain: true)
        try #require(eventually { events().count == 3 }, "\(p.log)")
        try pub.publish("mobility/v1/teams/physio-north/silences/\(silence.id)", "", retain: true)
        try #require(eventually { events().count == 4 }, "\(p.log)")
        let resolved = Self.transition("stalled_recovery", "jamie", .warning, status: .resolved, headline: "walking as before")
        try pub.publish(topic, resolved.json)
        try #require(eventually { events().count == 5 }, "\(p.log)")

        let e = events()
        #expect(e[0].hasPrefix(String(acked.acknowledged!.at.description.prefix(10)) + "  acknowledged"), "\(e[0])")
        #expect(e[0].hasSuffix("acknowledged by nurse.kim at \(Self.minute(acked.acknowledged!.at)): called Jamie"), "\(e[0])")
        #expect(e[1].hasPrefix("2026-03-12  reminder") && e[1].hasSuffix(fired.headline), "its own day, not the firing's: \(e[1])")
        #expect(e[2].contains("  silenced  ") && e[2].hasSuffix("silenced by dr.lee until \(Self.minute(silence.endsAt)): in hospital"), "\(e[2])")
        #expect(e[3].contains("  unsilenced  "), "\(e[3])")
        #expect(e[4].hasPrefix(resolved.endedDay!.description + "  resolved") && e[4].hasSuffix("walking as before"), "\(e[4])")
        #expect(!e.contains { $0.contains("  firing  ") }, "\(p.log)")
        #expect(p.stop(signal: SIGINT) == 0)
    }

    @Test func followJSONPrintsEachPayload() throws {
        let broker = try MosquittoBroker()
        let pub = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/#"])
        let p = try ChildProcess(Self.exe, ["alerts", "--broker", broker.url, "--follow", "--output", "json"])
        defer { p.stop(signal: SIGKILL) }
        try #require(eventually { p.log.contains("0 firing; following") }, "\(p.log)")
        let t = Self.transition("fall_risk", "alex", .critical)
        try pub.publish("mobility/v1/users/alex/alerts/fall_risk", t.json, retain: true)
        try #require(eventually { p.log.contains(t.json + "\n") }, "\(p.log)")
        #expect(p.stop(signal: SIGTERM) == 0)
    }

    /// As a person would: in a terminal (tmux), colour on; Ctrl-C ends it with status 0.
    @Test func inATerminalWithColourUntilCtrlC() throws {
        let tmux = "/usr/bin/tmux"
        try #require(FileManager.default.isExecutableFile(atPath: tmux), "tmux is missing: run scripts/install-deps.sh")
        let broker = try MosquittoBroker()
        let pub = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/#"])
        _ = try pub.publishAwaitingAnswer("mobility/v1/users/sam/alerts/low_activity", Self.transition("low_activity", "sam", .warning).json, retain: true)
        let socket = "mw-alerts-\(UUID().uuidString.prefix(8))"
        let conf = NSTemporaryDirectory() + socket + ".conf"
        try "set -g remain-on-exit on\n".write(toFile: conf, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: conf) }
        @discardableResult
        func run(_ args: [String]) throws -> String {
            // A ChildProcess, not Foundation's Process: the tmux server it forks must not inherit
            // the test runner's blocked signals (with them, new-session never returned).
            let p = try ChildProcess(tmux, ["-L", socket, "-f", conf] + args)
            guard p.wait(timeout: 10) == 0 else { throw HarnessError("tmux \(args.joined(separator: " ")): \(p.log)") }
            return p.log
        }
        try run([
            "new-session", "-d", "-s", "alerts", "-x", "100", "-y", "30",
            "exec env -u NO_COLOR -u COLUMNS bash -c '\(Self.exe) alerts --broker \(broker.url) --follow; echo \"exit status $?\"'"
        ])
        defer { _ = try? run(["kill-server"]) }
        func screen() -> String { (try? run(["capture-pane", "-p", "-e", "-t", "alerts"])) ?? "" }
        try #require(eventually { screen().contains("following") }, "\(screen())")
        #expect(screen().contains("\u{1B}[33mwarning"), "the table's severity in colour: \(screen())")
        let t = Self.transition("fall_risk", "alex", .critical, headline: String(repeating: "very long summary ", count: 10))
        try pub.publish("mobility/v1/users/alex/alerts/fall_risk", t.json, retain: true)
        try #require(eventually { screen().contains("fall_risk") }, "\(screen())")
        let line = try #require(screen().split(separator: "\n").first { $0.contains("fall_risk") })
        #expect(line.contains("\u{1B}[31mcritical"), "tmux re-encodes bold red as ESC[1m ESC[31m: \(line)")
        let plain = try #require(try run(["capture-pane", "-p", "-t", "alerts"]).split(separator: "\n").first { $0.contains("fall_risk") })
        #expect(plain.count == 100 && plain.hasSuffix("…"), "cut to the pane's width: \(plain)")
        try run(["send-keys", "-t", "alerts", "C-c"])
        try #require(eventually { screen().contains("exit status ") }, "\(screen())")
        #expect(screen().contains("exit status 0"), "\(screen())")  // bash reports the status of the Ctrl-C'd child
    }

    @Test(arguments: [
        (["--bogus"], "unknown argument --bogus"),
        (["--severity", "loud"], "--severity must be info, warning or critical, not 'loud'"),
        (["--broker"], "--broker needs a value"),
        (["--output", "yaml"], "--output must be table or json"),
        (["--user", "a/b"], "--user 'a/b' must be one topic level"),
        (["--mqtt-version", "4"], "--mqtt-version must be 3.1.1 or 5"),
        (["--password", "hunter2"], "--password is refused on the command line"),
        (["--broker", "http://x"], "must start with mqtt:// or mqtts://"),
        (["--cert-file", "c.pem"], "--cert-file and --key-file go together"),
        (["--credentials", "c", "--username", "nurse"], "give --credentials FILE --account NAME, or the older --username/--password-file, not both"),
        (["--account", "nurse"], "--account needs --credentials FILE")
    ])
    func badArgumentsAreUsageErrors(_ args: [String], _ message: String) throws {
        let r = try Self.alerts(args)
        #expect(r.status == 2)
        #expect(r.stderr.contains(message), "\(r.stderr)")
        #expect(!r.stderr.contains("hunter2"))
    }

    @Test func anUnreachableBrokerIsAConnectionFailure() throws {
        let port = try freePort()
        let r = try Self.alerts(["--broker", "mqtt://127.0.0.1:\(port)"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("cannot connect to mqtt://127.0.0.1:\(port)"), "\(r.stderr)")
    }

    @Test func aRefusedLoginIsAConnectionFailureAndThePasswordIsNeverPrinted() throws {
        let dir = TemporaryPath.make("mw-alerts")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let passwd = try ChildProcess("/usr/bin/mosquitto_passwd", ["-c", "-b", dir + "/passwd", "nurse", "right-one"])
        try #require(passwd.wait() == 0, "\(passwd.log)")
        let port = try freePort()
        try """
        per_listener_settings false
        allow_anonymous false
        password_file \(dir)/passwd
        listener \(port) 127.0.0.1
        \(getuid() == 0 ? "user root" : "")

        """.write(toFile: dir + "/m.conf", atomically: true, encoding: .utf8)
        let broker = try ChildProcess("/usr/sbin/mosquitto", ["-c", dir + "/m.conf"])
        defer { broker.stop() }
        try #require(eventually { canConnect(port: port) })
        func passwordFile(_ name: String, _ secret: String, mode: Int) throws -> String {
            let path = dir + "/" + name
            try FileManager.default.createFile(atPath: path, contents: Data((secret + "\n").utf8), attributes: [.posixPermissions: mode])
                ? () : { throw HarnessError("cannot write \(path)") }()
            return path
        }
        let url = "mqtt://127.0.0.1:\(port)"
        let wrong = try Self.alerts(["--broker", url, "--username", "nurse", "--password-file", try passwordFile("wrong", "wrong-one", mode: 0o600)])
        #expect(wrong.status == 1)
        #expect(wrong.stderr.contains("refused the login as nurse"), "\(wrong.stderr)")
        #expect(!wrong.stderr.contains("wrong-one") && !wrong.stdout.contains("wrong-one"))
        let loose = try Self.alerts(["--broker", url, "--username", "nurse", "--password-file", try passwordFile("loose", "right-one", mode: 0o644)])
        #expect(loose.status == 2)
        #expect(loose.stderr.contains("accessible to group or others") && !loose.stderr.contains("right-one"), "\(loose.stderr)")
        // The older spelling, kept as an alias for a release.
        let right = try Self.alerts(["--broker", url, "--username", "nurse", "--password-file", try passwordFile("right", "right-one", mode: 0o400)])
        #expect(right.status == 0, "\(right.stderr)")
        #expect(right.stdout.hasPrefix("ID  "))
        // The convention of every other broker command: 'account password' lines and --account.
        let credentials = try passwordFile("credentials", "care-dashboard cd-secret-x\nnurse right-one", mode: 0o600)
        let account = try Self.alerts(["--broker", url, "--credentials", credentials, "--account", "nurse"])
        #expect(account.status == 0 && account.stdout.hasPrefix("ID  "), "\(account.stderr)")
        let refused = try Self.alerts(["--broker", url, "--credentials", credentials])
        #expect(refused.status == 1 && refused.stderr.contains("refused the login as care-dashboard"), "the default account: \(refused.stderr)")
        #expect(!refused.stderr.contains("cd-secret-x") && !refused.stderr.contains("right-one"))
        let missing = try Self.alerts(["--broker", url, "--credentials", credentials, "--account", "kim"])
        #expect(missing.status == 2 && missing.stderr.contains("has no line for kim"), "\(missing.stderr)")
    }
}
