import Foundation
import Glibc
import MobilityModel
import StateStore
import TestSupport
import Testing

/// The broker and daemon configuration of `deploy/`, as shipped: mosquitto runs the shipped
/// `mosquitto.conf` and `mosquitto.acl`, mobilityd the shipped `mobilityd.conf.example`, with only
/// ports, paths and secrets substituted (and the TLS listener bound to 127.0.0.2, a loopback
/// address standing in for the machine's network address: tests serve on loopback only).
final class ShippedDeployment: @unchecked Sendable {
    let dir: String
    let tlsPort: Int, plainPort: Int, metricsPort: Int
    let broker: ChildProcess
    var daemon: ChildProcess?
    /// Each account's password (a fresh one per run).
    let passwords: [String: String]
    var tlsURL: String { "mqtts://127.0.0.2:\(tlsPort)" }
    var ca: String { dir + "/ca.crt" }

    /// - Parameters:
    ///   - editACL: changes to the shipped ACL, for tests of a broker that refuses outputs
    ///     (the shipped-files tests pass none).
    ///   - gateways: more gateway accounts (user ids) than `jamie` and `alex`.
    init(editACL: [(String, String)] = [], gateways: [String] = []) throws {
        dir = TemporaryPath.make("mw-deploy")
        try FileManager.default.createDirectory(atPath: dir + "/persist", withIntermediateDirectories: true)
        try ShippedDeployment.mintCertificates(dir)
        var pw: [String: String] = [:]
        for account in ["mobilityd", "mobilityd-pub", "care-dashboard", "ehr-bridge", "jamie", "alex"] + gateways {
            // The daemon's two accounts share its one password (mobilityd.conf.example).
            pw[account] = account == "mobilityd-pub" ? pw["mobilityd"]! : UUID().uuidString
            let args = (pw.count == 1 ? ["-c"] : []) + ["-b", dir + "/passwd", account, pw[account]!]
            try run("/usr/bin/mosquitto_passwd", args)
        }
        passwords = pw
        tlsPort = try freePort()
        plainPort = try freePort()
        metricsPort = try freePort()
        let shipped = try String(contentsOfFile: RepoPaths.root + "/deploy/mosquitto.conf", encoding: .utf8)
        let conf = try ShippedDeployment.substitute(
            shipped,
            [
                ("listener 8883", "listener \(tlsPort) 127.0.0.2"),
                ("listener 1883 127.0.0.1", "listener \(plainPort) 127.0.0.1"),
                ("/etc/mosquitto/certs/", dir + "/"),
                ("/etc/mosquitto/mobilitywatch.passwd", dir + "/passwd"),
                ("/etc/mosquitto/mobilitywatch.acl", dir + "/mobilitywatch.acl"),
                ("/var/lib/mosquitto/", dir + "/persist/")
            ])
        try conf.write(toFile: dir + "/mosquitto.conf", atomically: true, encoding: .utf8)
        let acl = try String(contentsOfFile: RepoPaths.root + "/deploy/mosquitto.acl", encoding: .utf8)
        try ShippedDeployment.substitute(acl, editACL).write(toFile: dir + "/mobilitywatch.acl", atomically: true, encoding: .utf8)
        if getuid() == 0 { try run("/bin/chown", ["-R", "mosquitto", dir]) }  // mosquitto drops root for its own user
        broker = try ChildProcess("/usr/sbin/mosquitto", ["-c", dir + "/mosquitto.conf"], logPath: dir + "/broker.log")
        guard eventually(timeout: 10, { canConnect(port: plainPort) && canConnect(host: "127.0.0.2", port: tlsPort) }) else {
            throw HarnessError("the shipped mosquitto.conf did not start:\n\(broker.log)")
        }
        // It listens where the file says and nowhere else (a listener option placed before the
        // first `listener` line once opened a plain listener on 1883 of every address).
        let opened = broker.log.split(separator: "\n").filter { $0.contains("listen socket on port") }
        guard opened.count == 2, opened.allSatisfy({ $0.hasSuffix("port \(tlsPort).") || $0.hasSuffix("port \(plainPort).") }) else {
            throw HarnessError("the shipped mosquitto.conf opens other listeners: \(opened)")
        }
    }

    /// Starts mobilityd with the shipped example configuration.
    func startDaemon(edit: [(String, String)] = []) throws {
        let d = try launchDaemon(edit: edit)
        guard eventually(timeout: 15, { httpGet(port: self.metricsPort, path: "/healthz")?.status == 200 }) else {
            throw HarnessError("mobilityd did not become healthy:\n\(d.log)")
        }
        guard
            eventually(
                timeout: 5, { (try? parsePrometheus(httpGet(port: self.metricsPort, path: "/metrics")?.body ?? ""))?["mobilityd_broker_subscribed"] == 1 })
        else {
            throw HarnessError("mobilityd did not subscribe:\n\(d.log)")
        }
    }

    /// Starts mobilityd with the shipped example configuration, edited, without waiting for it.
    @discardableResult
    func launchDaemon(edit: [(String, String)] = []) throws -> ChildProcess {
        let example = try String(contentsOfFile: RepoPaths.root + "/deploy/mobilityd.conf.example", encoding: .utf8)
        let conf = try ShippedDeployment.substitute(
            example,
            [
                ("mqtts://mqtt.example.org:8883", tlsURL),
                ("/etc/mobilitywatch/ca.crt", ca),
                ("# password-file = /etc/mobilitywatch/mqtt-password", "password-file = \(dir)/mqtt-password"),
                ("/etc/mobilitywatch/rules", RepoPaths.rules),
                ("/var/lib/mobilitywatch", dir + "/state"),
                ("127.0.0.1:9464", "127.0.0.1:\(metricsPort)")
            ] + edit)
        try conf.write(toFile: dir + "/mobilityd.conf", atomically: true, encoding: .utf8)
        try (passwords["mobilityd"]! + "\n").write(toFile: dir + "/mqtt-password", atomically: true, encoding: .utf8)
        chmod(dir + "/mqtt-password", 0o600)
        let d = try ChildProcess(ChildProcess.product("mobilityd"), ["--config", dir + "/mobilityd.conf"], logPath: dir + "/mobilityd.log")
        daemon = d
        return d
    }

    /// A client logged in as `account` over TLS (MQTT 5, so refusals come back as reason codes).
    func client(_ account: String, filters: [String], clientID: String? = nil, cleanSession: Bool = true) throws -> MQTTRecorder {
        try MQTTRecorder(
            url: tlsURL, filters: filters, clientID: clientID ?? "\(account)-\(UUID().uuidString.prefix(6))",
            cleanSession: cleanSession, username: account, password: passwords[account], caFile: ca, version: .v5)
    }

    /// Writes a `mobility-sim --credentials` file (`account password` lines) for `accounts`, with
    /// `mode`; a password of `wrong` replaces an account's real one.
    func credentialsFile(_ accounts: [String], mode: mode_t = 0o600, wrong: Set<String> = []) throws -> String {
        let path = dir + "/sim-credentials-\(UUID().uuidString.prefix(6))"
        let lines = accounts.map { "\($0) \(wrong.contains($0) ? "not-the-password" : passwords[$0]!)" }
        try ("# account password\n" + lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, mode)
        return path
    }

    func metrics() -> [String: Double] {
        guard let r = httpGet(port: metricsPort, path: "/metrics"), r.status == 200 else { return [:] }
        return (try? parsePrometheus(r.body)) ?? [:]
    }

    deinit {
        _ = daemon?.stop()
        broker.stop()
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// Replaces each `from` (which must occur in the shipped text) and nothing else.
    static func substitute(_ text: String, _ pairs: [(String, String)]) throws -> String {
        var out = text
        for (from, to) in pairs {
            guard out.contains(from) else { throw HarnessError("the shipped file no longer contains '\(from)'") }
            out = out.replacingOccurrences(of: from, with: to)
        }
        return out
    }

    /// A throwaway CA and a server certificate for 127.0.0.1 and 127.0.0.2.
    static func mintCertificates(_ dir: String) throws { try TestCertificates.mint(dir) }
}

private func run(_ tool: String, _ args: [String]) throws {
    let p = try ChildProcess(tool, args)
    guard p.wait() == 0 else { throw HarnessError("\(tool) \(args.joined(separator: " ")) failed: \(p.log)") }
}

/// MQTT 5 reason code 135: not authorised.
private let notAuthorized: Int32 = 135

@Suite(.serialized) struct ShippedDeploymentTests {
    /// A gateway's samples become alerts at the dashboard; acknowledgements and rejections reach
    /// the gateway itself only; every forged or foreign publish is refused and reaches nobody.
    @Test func shippedFilesDeliverTheWholeFlowAndNothingElse() throws {
        let d = try ShippedDeployment()
        try d.startDaemon()
        let dashboard = try d.client("care-dashboard", filters: ["mobility/v1/#"])
        let jamie = try d.client("jamie", filters: ["mobility/v1/#"])
        let alex = try d.client("alex", filters: ["mobility/v1/#"])

        // Jamie's capped six-minute-walk estimate fires uncalibrated_6mwd at once.
        let now = isoNow()
        let estimate = sampleJSON(id: "jamie-6mwd-1", type: "sixMinuteWalkTestDistance", value: 500, unit: "m", end: now)
        #expect(try jamie.publishAwaitingAnswer(samplesTopic("jamie"), estimate) == 0)
        let alert = alertTopic("jamie", "uncalibrated_6mwd")
        #expect(eventually { dashboard.messages(prefix: alert).count == 1 }, "no alert at the dashboard:\n\(d.daemon!.log)")
        #expect(dashboard.messages(prefix: alert).first.map { $0.text.contains("\"status\":\"firing\"") } == true)
        // The commit acknowledgement reaches Jamie's gateway, naming the sample.
        let acks = "mobility/v1/users/jamie/acks"
        #expect(eventually { jamie.messages(prefix: acks).contains { $0.text.contains("jamie-6mwd-1") } })
        // A rejection too.
        #expect(try jamie.publishAwaitingAnswer(samplesTopic("jamie"), sampleJSON(id: "bad", value: 40, end: now)) == 0)
        #expect(eventually { jamie.messages(prefix: "mobility/v1/users/jamie/rejected").count == 1 })

        // Refused at the broker (reason 135), for every forgery the ACL must stop. mosquitto
        // 2.0.11 also closes the connection after each denied publish (MQTT-3.3.5-2 allows it), and
        // client ids are usernames: so each forgery gets a connection of its own, and the forging
        // account's observer steps aside meanwhile (a second connection would take its place).
        let received = d.metrics()["mobilityd_messages_received_total"]
        func forge(_ account: String, _ cases: [(String, String)]) throws {
            for (topic, payload) in cases {
                let forger = try d.client(account, filters: [])
                let answer = try forger.publishAwaitingAnswer(topic, payload)
                #expect(answer == notAuthorized, "\(account) → \(topic) was not refused: \(String(describing: answer))")
                forger.stop()
            }
        }
        jamie.stop()
        try forge(
            "jamie",
            [
                (samplesTopic("alex"), sampleJSON(id: "forged-1", value: 1.1, end: now)),  // another user's samples
                ("mobility/v1/users/alex/events", "{\"id\":\"forged-2\",\"kind\":\"injury\",\"date\":\"2026-01-01\"}"),
                ("mobility/v1/users/jamie/alerts/stalled_recovery", "{\"forged\":3}"),  // a forged alert
                ("mobility/v1/users/jamie/series", "{\"forged\":4}"),
                ("mobility/v1/users/jamie/reports/weekly", "{\"forged\":12}"),  // a forged care-team report
                (acks, "{\"forged\":5}"),  // a forged ack
                ("mobility/v1/users/jamie/rejected", "{\"forged\":6}"),
                ("mobility/v1/daemon/mobilityd-1/status", "forged-7")
            ])
        let jamie2 = try d.client("jamie", filters: ["mobility/v1/#"])
        dashboard.stop()
        try forge(
            "care-dashboard",
            [
                (samplesTopic("jamie"), sampleJSON(id: "forged-8", value: 1.1, end: now)),
                (samplesTopic("care-dashboard"), sampleJSON(id: "forged-9", value: 1.1, end: now)),  // a service account is no gateway
                (alert, "{\"forged\":10}"),
                ("mobility/v1/daemon/mobilityd-1/status", "forged-11")
            ])
        let dashboard2 = try d.client("care-dashboard", filters: ["mobility/v1/#"])
        // A payload over the shipped size limit is dropped by the broker (149: packet too large).
        let huge = "[" + String(repeating: estimate + ",", count: 300_000 / estimate.utf8.count) + estimate + "]"
        let big = try d.client("alex", filters: [])
        #expect(try big.publishAwaitingAnswer(samplesTopic("alex"), huge) == 149)
        big.stop()
        let alex2 = try d.client("alex", filters: ["mobility/v1/#"])

        // A barrier: a last real sample, processed after everything above.
        #expect(try alex2.publishAwaitingAnswer(samplesTopic("alex"), sampleJSON(id: "alex-1", value: 1.2, end: now)) == 0)
        #expect(eventually { alex2.messages(prefix: "mobility/v1/users/alex/acks").contains { $0.text.contains("alex-1") } })
        #expect(d.metrics()["mobilityd_messages_received_total"] == (received ?? -1) + 1)  // none of the forgeries reached the daemon
        let observers = [("dashboard", dashboard), ("dashboard", dashboard2), ("jamie", jamie), ("jamie", jamie2), ("alex", alex), ("alex", alex2)]
        for (name, client) in observers {
            #expect(!client.messages().contains { $0.text.contains("forged") }, "\(name) received a forged message")
        }
        // Each sees exactly what it may: Alex nothing of Jamie's, Jamie nothing of Alex's, the
        // dashboard no acks, rejections or inputs.
        for alex in [alex, alex2] {
            #expect(alex.messages().allSatisfy { $0.topic.hasPrefix("mobility/v1/users/alex/") }, "\(alex.messages().map(\.topic))")
        }
        for jamie in [jamie, jamie2] {
            #expect(jamie.messages().allSatisfy { $0.topic.hasPrefix("mobility/v1/users/jamie/") }, "\(jamie.messages().map(\.topic))")
        }
        #expect(Set(jamie.messages().map { $0.topic.split(separator: "/")[4] }) == ["acks", "rejected"])
        for dashboard in [dashboard, dashboard2] {
            #expect(
                dashboard.messages().allSatisfy {
                    $0.topic.contains("/alerts/") || $0.topic.hasSuffix("/series") || $0.topic.contains("/reports/") || $0.topic.hasSuffix("/status")
                })
            #expect(dashboard.messages().contains { $0.topic == "mobility/v1/daemon/mobilityd-1/status" && $0.text == "online" })
        }
        #expect(dashboard2.messages(prefix: alert).count == 1)  // the retained firing alert, for a dashboard that connects later

        // What staff run: `mobilityctl alerts` as care-dashboard through the shipped broker lists
        // the firing alert (its barrier topic is granted by the shipped ACL).
        let passwordFile = d.dir + "/dashboard-password"
        try (d.passwords["care-dashboard"]! + "\n").write(toFile: passwordFile, atomically: true, encoding: .utf8)
        chmod(passwordFile, 0o600)
        let ctl = try ChildProcess(
            ChildProcess.product("mobilityctl"),
            [
                "alerts", "--broker", d.tlsURL, "--ca-file", d.ca, "--username", "care-dashboard", "--password-file", passwordFile,
                "--mqtt-version", "5", "--user", "jamie"
            ])
        #expect(ctl.wait(timeout: 30) == 0, "\(ctl.log)")
        #expect(ctl.log.contains("uncalibrated_6mwd") && ctl.log.contains("jamie"), "\(ctl.log)")

        // Nothing was refused on the daemon's side, and its connections never dropped.
        let m = d.metrics()
        #expect(m.keys.filter { $0.hasPrefix("mobilityd_publish_refused_total") }.isEmpty, "\(m)")
        #expect(m["mobilityd_dead_letters"] == 0)
        // The ACL lets the daemon read the broker's drop counter.
        #expect(eventually(timeout: 15) { d.metrics()["mobilityd_broker_messages_dropped"] == 0 })
        #expect(m["mobilityd_broker_reconnects_total{role=\"publisher\"}"] == 0)
        #expect(m["mobilityd_broker_reconnects_total{role=\"subscriber\"}"] == 0)

        // Plain MQTT answers on loopback only; without credentials nobody gets in.
        #expect(canConnect(port: d.plainPort))
        #expect(!canConnect(host: "127.0.0.2", port: d.plainPort))
        #expect(throws: (any Error).self) { _ = try MQTTRecorder(url: d.tlsURL, filters: [], caFile: d.ca, version: .v5) }
    }

    /// The shipped team account (`staff-ward-a`): it receives its team's alerts and nothing of a
    /// user in another team, and it publishes nothing; a gateway cannot write team topics.
    @Test func teamStaffSeeExactlyTheirTeam() throws {
        let teamRejected = "mobility/v1/teams/ward-a/commands/rejected", teamAck = "mobility/v1/teams/ward-a/commands/ack"
        func ack(_ alert: String, _ user: String) -> String { "{\"alert\":\"\(alert)\",\"user\":\"\(user)\",\"by\":\"nurse.kim\"}" }
        let d = try ShippedDeployment(gateways: ["staff-ward-a"])
        try d.startDaemon()
        let staff = try d.client("staff-ward-a", filters: ["mobility/v1/teams/+/users/+/alerts/#", "mobility/v1/users/+/alerts/#", teamRejected])
        let dashboard = try d.client("care-dashboard", filters: ["mobility/v1/users/+/alerts/#", "mobility/v1/audit"])
        let jamie = try d.client("jamie", filters: ["mobility/v1/users/jamie/acks"])
        let alex = try d.client("alex", filters: ["mobility/v1/users/alex/acks"])
        for (gw, user, team) in [(jamie, "jamie", "ward-a"), (alex, "alex", "ward-b")] {
            #expect(
                try gw.publishAwaitingAnswer(
                    "mobility/v1/users/\(user)/profile",
                    "{\"timeZone\":\"UTC\",\"careTeams\":[\"\(team)\"]}", retain: true) == 0)
            let estimate = sampleJSON(id: "\(user)-6mwd", type: "sixMinuteWalkTestDistance", value: 500, unit: "m", end: isoNow())
            #expect(try gw.publishAwaitingAnswer(samplesTopic(user), estimate) == 0)
        }
        // Both alerts are out (the daemon idle, everything acknowledged by the broker)…
        #expect(eventually { d.metrics()["mobilityd_alert_transitions_total{rule=\"uncalibrated_6mwd\",status=\"firing\"}"] == 2 }, "\(d.daemon!.log)")
        #expect(eventually { d.metrics()["mobilityd_outputs_unacknowledged"] == 0 })
        #expect(eventually { staff.messages().count == 1 })

        // Staff acknowledge on their team's command topic: an alert of a user of another team is
        // refused with its reason (on the daemon's publisher, after both alerts: a barrier)…
        let jamieAlert = try #require(AlertTransition.parse(staff.messages(prefix: "mobility/v1/teams/ward-a/users/jamie/alerts/").first!.payload))
        #expect(eventually { dashboard.messages(prefix: alertTopic("alex", "uncalibrated_6mwd")).count == 1 })
        let alexAlert = try #require(AlertTransition.parse(dashboard.messages(prefix: alertTopic("alex", "uncalibrated_6mwd")).first!.payload))
        #expect(try staff.publishAwaitingAnswer(teamAck, ack(alexAlert.id, "alex")) == 0)
        #expect(eventually { staff.messages(prefix: teamRejected).contains { $0.text.contains("\"reason\":\"unknown_alert\"") } })
        // …so the staff of ward-a have exactly jamie's alert, on their team's topic.
        let topics = staff.messages().map(\.topic)
        #expect(topics == ["mobility/v1/teams/ward-a/users/jamie/alerts/uncalibrated_6mwd", teamRejected])

        // Their own team's alert is acknowledged, and the retained copy under their team carries it.
        #expect(try staff.publishAwaitingAnswer(teamAck, ack(jamieAlert.id, "jamie")) == 0)
        let teamCopy = "mobility/v1/teams/ward-a/users/jamie/alerts/uncalibrated_6mwd"
        #expect(
            eventually { staff.messages(prefix: teamCopy).last.flatMap { AlertTransition.parse($0.payload)?.acknowledged?.by } == "nurse.kim" },
            "the team's copy does not carry the acknowledgement: \(staff.messages(prefix: teamCopy).map(\.text))")
        #expect(eventually { dashboard.messages(prefix: "mobility/v1/audit").count == 1 })

        // Refused (135): staff publishing under another team or their own, acknowledging for
        // another team; a gateway on any team topic, its own team's commands included.
        staff.stop()
        jamie.stop()
        for (account, topic, payload) in [
            ("staff-ward-a", "mobility/v1/teams/ward-b/users/alex/alerts/uncalibrated_6mwd", "{\"forged\":1}"),
            ("staff-ward-a", "mobility/v1/teams/ward-a/users/jamie/alerts/uncalibrated_6mwd", "{\"forged\":1}"),
            ("staff-ward-a", "mobility/v1/teams/ward-b/commands/ack", ack(alexAlert.id, "alex")),
            ("staff-ward-a", samplesTopic("staff-ward-a"), "{\"forged\":1}"),
            ("jamie", "mobility/v1/teams/ward-a/users/jamie/alerts/uncalibrated_6mwd", "{\"forged\":1}"),
            ("jamie", "mobility/v1/teams/ward-a/users/jamie/reports/weekly", "{\"forged\":1}"),
            ("jamie", teamAck, ack(jamieAlert.id, "jamie")),
            ("alex", "mobility/v1/teams/ward-b/commands/ack", ack(alexAlert.id, "alex"))
        ] {
            let forger = try d.client(account, filters: [])
            #expect(try forger.publishAwaitingAnswer(topic, payload) == notAuthorized, "\(account) → \(topic)")
            forger.stop()
        }
        // None of them reached the daemon: one acknowledgement, one refusal, Alex's alert unacknowledged.
        // (A barrier: a command sent after the forgeries comes back refused.)
        let staff2 = try d.client("staff-ward-a", filters: [teamRejected])
        #expect(try staff2.publishAwaitingAnswer(teamAck, ack("00000000deadbeef", "jamie")) == 0)
        #expect(eventually { staff2.messages(prefix: teamRejected).contains { $0.text.contains("\"reason\":\"unknown_alert\"") } })
        #expect(d.metrics()["mobilityd_acknowledgements_total{result=\"accepted\"}"] == 1)
        #expect(d.metrics()["mobilityd_acknowledgements_total{result=\"unknown_alert\"}"] == 2)
        #expect(dashboard.messages(prefix: "mobility/v1/audit").count == 1)
        #expect(dashboard.messages(prefix: alertTopic("alex", "uncalibrated_6mwd")).allSatisfy { AlertTransition.parse($0.payload)?.acknowledged == nil })
    }

    /// Silences through the shipped ACL: staff of ward-a silence for ward-a (the command reaches
    /// the daemon, the silence comes back retained on their team's topic, `mobilityctl silence`
    /// works as them), and never for ward-b (refused at the broker, 135); they do not see ward-b's
    /// silences; a gateway cannot silence at all.
    @Test func teamStaffSilenceForTheirTeamOnly() throws {
        let d = try ShippedDeployment(gateways: ["staff-ward-a"])
        try d.startDaemon()
        for (user, team) in [("jamie", "ward-a"), ("alex", "ward-b")] {
            let gw = try d.client(user, filters: [])
            #expect(
                try gw.publishAwaitingAnswer("mobility/v1/users/\(user)/profile", "{\"timeZone\":\"UTC\",\"careTeams\":[\"\(team)\"]}", retain: true) == 0)
            gw.stop()
        }
        #expect(eventually { d.metrics()["mobilityd_messages_received_total"] == 2 })
        let staff = try d.client("staff-ward-a", filters: ["mobility/v1/teams/+/silences/+", "mobility/v1/teams/+/commands/rejected"])
        func add(_ team: String, user: String) -> String {
            "{\"action\":\"add\",\"matchers\":[{\"name\":\"user\",\"value\":\"\(user)\"}],\"endsAt\":\"\(isoNow(days: 1))\",\"createdBy\":\"kim\",\"comment\":\"c\"}"
        }
        #expect(try staff.publishAwaitingAnswer("mobility/v1/teams/ward-a/commands/silence", add("ward-a", user: "jamie")) == 0)
        #expect(eventually { staff.messages(prefix: "mobility/v1/teams/ward-a/silences/").count == 1 }, "\(d.daemon!.log)")
        // The all-teams dashboard may silence for ward-b; ward-a's staff do not see it.
        let dashboard = try d.client("care-dashboard", filters: ["mobility/v1/teams/+/silences/+"])
        #expect(try dashboard.publishAwaitingAnswer("mobility/v1/teams/ward-b/commands/silence", add("ward-b", user: "alex")) == 0)
        #expect(eventually { dashboard.messages(prefix: "mobility/v1/teams/ward-b/silences/").count == 1 })

        // mobilityctl silence query as ward-a's staff, through the shipped broker: ward-a's only.
        let creds = try d.credentialsFile(["staff-ward-a"])
        let query = try ChildProcess(
            ChildProcess.product("mobilityctl"),
            ["silence", "query", "--broker", d.tlsURL, "--ca-file", d.ca, "--credentials", creds, "--account", "staff-ward-a"])
        #expect(query.wait(timeout: 30) == 0, "\(query.log)")
        #expect(query.log.contains("user=\"jamie\"") && !query.log.contains("alex"), "\(query.log)")

        // Refused at the broker: ward-a's staff for ward-b, a gateway for any team.
        staff.stop()
        for (account, topic) in [
            ("staff-ward-a", "mobility/v1/teams/ward-b/commands/silence"), ("staff-ward-a", "mobility/v1/teams/ward-b/commands/ack"),
            ("staff-ward-a", "mobility/v1/teams/ward-a/silences/0123456789abcdef"),
            ("jamie", "mobility/v1/teams/ward-a/commands/silence"), ("jamie", "mobility/v1/teams/ward-b/commands/silence")
        ] {
            let forger = try d.client(account, filters: [])
            #expect(try forger.publishAwaitingAnswer(topic, add("ward-b", user: "alex")) == notAuthorized, "\(account) → \(topic)")
            forger.stop()
        }
        let staff2 = try d.client("staff-ward-a", filters: ["mobility/v1/teams/+/silences/+"])
        #expect(eventually { staff2.messages().count == 1 })  // the retained ward-a silence
        #expect(staff2.messages().allSatisfy { $0.topic.hasPrefix("mobility/v1/teams/ward-a/") }, "\(staff2.messages().map(\.topic))")
        // The daemon took two silences and nothing else; none of its outputs was refused.
        let m = d.metrics()
        #expect(m["mobilityd_silence_commands_total{result=\"accepted\"}"] == 2)
        #expect(m["mobilityd_silences{state=\"active\"}"] == 2)
        #expect(m.keys.filter { $0.hasPrefix("mobilityd_publish_refused_total") }.isEmpty, "\(m)")
    }

    /// Timeline entries through the shipped files: ward-a's staff account records, corrects and
    /// retracts an injury of its patient with `mobilityctl event`, and the report listener (its
    /// shipped lines uncommented) takes one with a ward-a token; the audit names each person. The
    /// broker refuses (135) ward-a's staff on ward-b's command topic, and a gateway on another
    /// user's events topic or on any team's; the all-teams dashboard may record for ward-b.
    @Test func staffRecordTimelineEntriesForTheirTeamOnly() throws {
        let d = try ShippedDeployment(gateways: ["staff-ward-a"])
        let httpPort = try freePort(), token = String(repeating: "d9", count: 20)
        try "nurse.lee:\(token) teams=ward-a write=events\n".write(toFile: d.dir + "/http-tokens", atomically: true, encoding: .utf8)
        chmod(d.dir + "/http-tokens", 0o600)
        try d.startDaemon(edit: [
            ("# http-address = 127.0.0.1:9465", "http-address = 127.0.0.1:\(httpPort)"),
            ("# http-tokens = /run/credentials/mobilityd.service/http-tokens", "http-tokens = \(d.dir)/http-tokens")
        ])
        for (user, team) in [("jamie", "ward-a"), ("alex", "ward-b")] {
            let gw = try d.client(user, filters: [])
            #expect(try gw.publishAwaitingAnswer("mobility/v1/users/\(user)/profile", "{\"timeZone\":\"UTC\",\"careTeams\":[\"\(team)\"]}", retain: true) == 0)
            gw.stop()
        }
        #expect(eventually { d.metrics()["mobilityd_messages_received_total"] == 2 })
        let day = { (k: Double) in String(isoNow(days: k).prefix(10)) }
        let creds = try d.credentialsFile(["staff-ward-a", "care-dashboard"])
        func event(_ account: String, _ args: [String]) throws -> (Int32, String) {
            let p = try ChildProcess(
                ChildProcess.product("mobilityctl"), ["event"] + args + ["--broker", d.tlsURL, "--ca-file", d.ca, "--credentials", creds, "--account", account])
            return (p.wait(timeout: 30), p.log)
        }
        let jamie = ["--team", "ward-a", "--user", "jamie", "--id", "inj-1"]
        for args in [
            ["add", "--kind", "injury", "--date", day(-5), "--by", "nurse.kim"] + jamie,
            ["correct", "--kind", "injury", "--date", day(-4), "--by", "nurse.kim", "--comment", "from the letter"] + jamie,
            ["retract", "--by", "dr.lee"] + jamie,
            ["add", "--kind", "fall", "--date", day(-2), "--by", "nurse.kim", "--team", "ward-a", "--user", "jamie", "--id", "fall-1"]
        ] {
            let (code, log) = try event("staff-ward-a", args)
            #expect(code == 0, "\(args): \(log)\n\(d.daemon!.log)")
        }
        // Ward-a's staff cannot send on ward-b's topic: the broker refuses, mobilityctl says so.
        let (foreign, foreignLog) = try event(
            "staff-ward-a", ["add", "--kind", "fall", "--date", day(-2), "--by", "nurse.kim", "--team", "ward-b", "--user", "alex", "--id", "f"])
        #expect(foreign == 1 && foreignLog.contains("reason code 135"), "\(foreignLog)")
        // The all-teams dashboard may; ward-b's answer is on ward-b's audit topic.
        let (dashboard, dashboardLog) = try event(
            "care-dashboard",
            ["add", "--kind", "illness", "--start", day(-3), "--end", day(-1), "--by", "dr.ng", "--team", "ward-b", "--user", "alex", "--id", "ill"])
        #expect(dashboard == 0, "\(dashboardLog)")
        // Over the shipped report listener, with a ward-a token.
        let posted = try Curl.post(
            "http://127.0.0.1:\(httpPort)/api/v1/users/jamie/events",
            json: #"{"action":"add","user":"jamie","entry":{"id":"pain-1","kind":"pain","category":"annotation","date":"\#(day(-1))"}}"#,
            headers: ["Authorization: Bearer \(token)"])
        #expect(posted.status == 200, "\(posted.body)")
        #expect(
            try Curl.post(
                "http://127.0.0.1:\(httpPort)/api/v1/users/alex/events",
                json: #"{"action":"add","user":"alex","entry":{"id":"p","kind":"pain","category":"annotation","date":"\#(day(-1))"}}"#,
                headers: ["Authorization: Bearer \(token)"]
            ).status == 404)

        // Refused at the broker (135): other users' timelines, other teams' commands.
        let entry = #"{"id":"forged","kind":"injury","date":"\#(day(-1))"}"#
        let command = #"{"action":"add","user":"alex","by":"x","entry":{"id":"forged","kind":"injury","category":"clinical","date":"\#(day(-1))"}}"#
        for (account, topic, payload) in [
            ("jamie", "mobility/v1/users/alex/events", entry), ("alex", "mobility/v1/users/jamie/events", entry),
            ("jamie", "mobility/v1/teams/ward-a/commands/event", command), ("staff-ward-a", "mobility/v1/teams/ward-b/commands/event", command),
            ("staff-ward-a", "mobility/v1/users/alex/events", entry), ("staff-ward-a", "mobility/v1/teams/ward-a/audit", "{\"forged\":1}")
        ] {
            let forger = try d.client(account, filters: [])
            #expect(try forger.publishAwaitingAnswer(topic, payload) == notAuthorized, "\(account) → \(topic)")
            forger.stop()
        }
        // The store's audit: who did what, in order; the gateways' forgeries never arrived.
        #expect(eventually { d.metrics()["mobilityd_timeline_commands_total{result=\"accepted\"}"] == 6 })
        let audit = try ChildProcess(ChildProcess.product("mobilityctl"), ["audit", "--state", d.dir + "/state", "--output", "json"])
        #expect(audit.wait() == 0)
        let rows = audit.log.split(separator: "\n").compactMap { try? JSONValue.parse(String($0)).get() }
        func text(_ v: JSONValue?) -> String { if case .string(let s)? = v { s } else { "?" } }
        #expect(
            rows.map { [$0["action"], $0["by"], $0["team"], $0["subject"]].map(text).joined(separator: " ") } == [
                "add_event nurse.kim ward-a inj-1", "correct_event nurse.kim ward-a inj-1", "retract_event dr.lee ward-a inj-1",
                "add_event nurse.kim ward-a fall-1", "add_event dr.ng ward-b ill", "add_event nurse.lee ward-a pain-1"
            ], "\(audit.log)")
        let m = d.metrics()
        #expect(m.keys.filter { $0.hasPrefix("mobilityd_publish_refused_total") }.isEmpty, "every output is granted by the shipped ACL: \(m)")
        #expect(m["mobilityd_dead_letters"] == 0)
    }

    /// The shipped FHIR lines (`fhir = on` uncommented): a gateway's alert reaches the integration
    /// account as a valid FHIR Flag; that account reads nothing else and publishes nothing.
    @Test func theFHIRFeedReachesTheIntegrationAccountOnly() throws {
        let d = try ShippedDeployment()
        try d.startDaemon(edit: [("# fhir = on", "fhir = on")])
        let ehr = try d.client("ehr-bridge", filters: ["mobility/v1/#"])
        let jamie = try d.client("jamie", filters: ["mobility/v1/users/jamie/acks"])
        let estimate = sampleJSON(id: "jamie-6mwd", type: "sixMinuteWalkTestDistance", value: 500, unit: "m", end: isoNow())
        #expect(try jamie.publishAwaitingAnswer(samplesTopic("jamie"), estimate) == 0)
        #expect(eventually { ehr.messages(prefix: "mobility/v1/fhir/users/jamie/Flag/").count == 1 }, "\(d.daemon!.log)")
        #expect(eventually { d.metrics()["mobilityd_outputs_unacknowledged"] == 0 })
        #expect(d.metrics().keys.filter { $0.hasPrefix("mobilityd_publish_refused_total") }.isEmpty, "\(d.metrics())")
        let flag = try #require(ehr.messages(prefix: "mobility/v1/fhir/users/jamie/Flag/").first)
        #expect(flag.text.contains("\"resourceType\":\"Flag\"") && flag.text.contains("\"status\":\"active\""))
        let verdict = try FHIRValidator.validate([flag.text])
        #expect(verdict.valid, "\(verdict.output)")
        // Nothing but FHIR reached it: not the alert, the commit acks or the daemon status.
        #expect(ehr.messages().allSatisfy { $0.topic.hasPrefix("mobility/v1/fhir/") }, "\(ehr.messages().map(\.topic))")
        ehr.stop()
        for (topic, payload) in [
            ("mobility/v1/fhir/users/jamie/Flag/mw-flag-forged", "{\"resourceType\":\"Flag\"}"),
            (samplesTopic("jamie"), sampleJSON(id: "forged", value: 1.1, end: isoNow())),
            ("mobility/v1/teams/ward-a/commands/ack", "{\"forged\":1}")
        ] {
            let forger = try d.client("ehr-bridge", filters: [])
            #expect(try forger.publishAwaitingAnswer(topic, payload) == notAuthorized, "ehr-bridge → \(topic)")
            forger.stop()
        }
        // A gateway cannot forge a FHIR resource either.
        jamie.stop()
        let gw = try d.client("jamie", filters: [])
        #expect(try gw.publishAwaitingAnswer("mobility/v1/fhir/users/jamie/Flag/mw-flag-x", "{}") == notAuthorized)
    }

    /// A gateway that connects with the daemon's client id (and a clean session) neither kicks
    /// the daemon nor wipes its persistent session: samples queued while the daemon was down
    /// still arrive.
    @Test func noAccountCanTakeOverTheDaemonsSession() throws {
        let d = try ShippedDeployment()
        try d.startDaemon()
        let jamie = try d.client("jamie", filters: ["mobility/v1/users/jamie/acks"])
        #expect(try jamie.publishAwaitingAnswer(samplesTopic("jamie"), sampleJSON(id: "s1", value: 1.2, end: isoNow())) == 0)
        #expect(eventually { jamie.messages().contains { $0.text.contains("\"s1\"") } })
        #expect(d.daemon!.stop() == 0)

        // While it is down the broker queues Jamie's samples in the daemon's session…
        #expect(try jamie.publishAwaitingAnswer(samplesTopic("jamie"), sampleJSON(id: "s2", value: 1.3, end: isoNow())) == 0)
        // …and a gateway tries to take that session over with the daemon's (documented) client id.
        for id in ["mobilityd-mobilityd-1", "mobilityd", "mobilityd-mobilityd-1-pub"] {
            let thief = try d.client("alex", filters: [], clientID: id, cleanSession: true)
            thief.stop()
        }
        // Service accounts are no gateways either, whatever their password.
        let sub = try d.client("mobilityd-pub", filters: [])
        #expect(try sub.publishAwaitingAnswer(samplesTopic("mobilityd-pub"), sampleJSON(id: "x", value: 1, end: isoNow())) == notAuthorized)
        sub.stop()

        try d.startDaemon()
        #expect(eventually(timeout: 15) { jamie.messages().contains { $0.text.contains("\"s2\"") } }, "the queued sample was lost:\n\(d.daemon!.log)")
        let m = d.metrics()
        #expect(m["mobilityd_samples_accepted_total"] == 1)
        #expect(m["mobilityd_broker_reconnects_total{role=\"subscriber\"}"] == 0)
    }

    /// The shipped configuration without its `publisher-username` line: both connections would
    /// log in as `mobilityd`, which the shipped broker turns into one client id (they evicted each
    /// other every second and the publisher's clean session wiped the subscriber's, with every
    /// input queued in it). Refused before connecting, exit 2, saying what to set.
    @Test func oneAccountForBothConnectionsIsRefused() throws {
        let d = try ShippedDeployment()
        let p = try d.launchDaemon(edit: [("publisher-username = mobilityd-pub", "")])
        #expect(p.wait(timeout: 15) == 2, "\(p.log)")
        #expect(p.log.contains("both MQTT connections would log in as 'mobilityd'") && p.log.contains("--publisher-username"), "\(p.log)")
        #expect(!d.broker.log.contains("u'mobilityd')"), "it never connected:\n\(d.broker.log)")
    }

    /// The same account for both connections, with the operator wrongly stating that the broker
    /// keeps client ids apart: the eviction loop is found at run time — logged as an error,
    /// counted, `/healthz` 503 (and so no watchdog-free "running" status either).
    @Test func anEvictionLoopIsLoudCountedAndUnhealthy() throws {
        let d = try ShippedDeployment()
        let p = try d.launchDaemon(edit: [("publisher-username = mobilityd-pub", "broker-binds-client-ids = false")])
        #expect(
            eventually(timeout: 30) { d.metrics()["mobilityd_broker_eviction_loop{role=\"subscriber\"}"] == 1 },
            "\(p.log)\n\(d.broker.log.suffix(3000))")
        let m = d.metrics()
        #expect((m["mobilityd_broker_evictions_total{role=\"subscriber\"}"] ?? 0) >= 3, "\(m)")
        let health = httpGet(port: d.metricsPort, path: "/healthz")
        #expect(health?.status == 503 && health?.body.contains("evicts the subscriber connection") == true, "\(String(describing: health))")
        #expect(p.log.contains("the broker closes this connection right after each connect"), "\(p.log)")
        #expect(p.isRunning)
    }

    /// A gateway that publishes its samples retained: the shipped broker takes them (its ACL
    /// cannot tell), and would deliver them again on every reconnect of the daemon; mobilityd
    /// refuses each delivery with `retained_input` (the live one too: MQTT 5, retain as
    /// published), applies nothing, and takes the same sample sent without retain. A retained
    /// profile is still taken, and the gateway's empty retained message clears the sample.
    @Test func aRetainedInputIsRefusedEachTimeItIsDelivered() throws {
        let d = try ShippedDeployment()
        try d.startDaemon()
        let jamie = try d.client("jamie", filters: ["mobility/v1/users/jamie/rejected", "mobility/v1/users/jamie/acks"])
        let sample = sampleJSON(id: "r1", value: 1.2, end: isoNow())
        #expect(try jamie.publishAwaitingAnswer(samplesTopic("jamie"), sample, retain: true) == 0)
        #expect(eventually { jamie.messages(prefix: "mobility/v1/users/jamie/rejected").count == 1 }, "\(d.daemon!.log)")
        let rejection = try #require(jamie.messages(prefix: "mobility/v1/users/jamie/rejected").first)
        #expect(rejection.text.contains("\"reason\":\"retained_input\""), "\(rejection.text)")
        var m = d.metrics()
        #expect(m["mobilityd_rejected_total{reason=\"retained_input\"}"] == 1 && m["mobilityd_samples_accepted_total"] == 0, "\(m)")

        // A restart re-subscribes: the broker delivers the retained sample again, refused again.
        #expect(d.daemon!.stop() == 0)
        try d.startDaemon()
        #expect(eventually { jamie.messages(prefix: "mobility/v1/users/jamie/rejected").count == 2 }, "\(d.daemon!.log)")
        #expect(d.metrics()["mobilityd_samples_accepted_total"] == 0)

        // Cleared by the gateway (nothing to refuse), then sent as it should be: taken.
        #expect(try jamie.publishAwaitingAnswer(samplesTopic("jamie"), "", retain: true) == 0)
        #expect(try jamie.publishAwaitingAnswer("mobility/v1/users/jamie/profile", "{\"timeZone\":\"UTC\"}", retain: true) == 0)
        #expect(try jamie.publishAwaitingAnswer(samplesTopic("jamie"), sample) == 0)
        #expect(eventually { jamie.messages(prefix: "mobility/v1/users/jamie/acks").contains { $0.text.contains("\"r1\"") } }, "\(d.daemon!.log)")
        m = d.metrics()
        #expect(m["mobilityd_samples_accepted_total"] == 1 && m["mobilityd_rejected_total{reason=\"retained_input\"}"] == 1, "\(m)")
        #expect(jamie.messages(prefix: "mobility/v1/users/jamie/rejected").count == 2)

        // A staff command published retained is refused too (the broker would deliver it again on
        // every reconnect: a retracted entry would come back), and nothing is recorded.
        let staff = try d.client("care-dashboard", filters: ["mobility/v1/teams/ward-a/commands/rejected"])
        let command =
            #"{"action":"add","user":"jamie","by":"nurse.kim","entry":{"id":"inj-r","kind":"injury","category":"clinical","date":"\#(String(isoNow(days: -1).prefix(10)))"}}"#
        #expect(try staff.publishAwaitingAnswer("mobility/v1/teams/ward-a/commands/event", command, retain: true) == 0)
        #expect(eventually { staff.messages().contains { $0.text.contains("\"reason\":\"retained_input\"") } }, "\(d.daemon!.log)")
        #expect(d.metrics()["mobilityd_timeline_commands_total{result=\"accepted\"}"] ?? 0 == 0)
        #expect(try staff.publishAwaitingAnswer("mobility/v1/teams/ward-a/commands/event", "", retain: true) == 0)
    }

    /// The shipped report-listener lines, uncommented with only paths and the port substituted
    /// (the shipped unit hands the tokens and the key over as credentials; here they are files
    /// of mode 0600): the status over TLS with a token, 401 without.
    @Test func theShippedReportListenerServesOverTLSWithATokenOnly() throws {
        let d = try ShippedDeployment()
        let port = try freePort()
        let token = UUID().uuidString + UUID().uuidString
        try "care-team:\(token)\n".write(toFile: d.dir + "/http-tokens", atomically: true, encoding: .utf8)
        chmod(d.dir + "/http-tokens", 0o600)
        chmod(d.dir + "/server.key", 0o600)
        try d.startDaemon(edit: [
            ("# http-address = 127.0.0.1:9465", "http-address = 127.0.0.1:\(port)"),
            ("# http-tokens = /run/credentials/mobilityd.service/http-tokens", "http-tokens = \(d.dir)/http-tokens"),
            ("# http-tls-cert = /etc/mobilitywatch/http.crt", "http-tls-cert = \(d.dir)/server.crt"),
            ("# http-tls-key = /run/credentials/mobilityd.service/http-key", "http-tls-key = \(d.dir)/server.key")
        ])
        let url = "https://127.0.0.1:\(port)/api/v1/status"
        #expect(try Curl.get(url, caFile: d.ca).status == 401)
        let r = try Curl.get(url, headers: ["Authorization: Bearer \(token)"], caFile: d.ca)
        #expect(r.status == 200, "\(r.log)")
        #expect(r.body.contains("\"instance\":\"mobilityd-1\""))
        #expect(d.metrics()["mobilityd_broker_subscribed"] == 1)  // /metrics needs no token
        #expect(!(d.daemon?.log.contains(token) ?? true))
    }
}
