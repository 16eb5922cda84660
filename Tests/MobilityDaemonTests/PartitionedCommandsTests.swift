import Foundation
import Glibc
import MobilityModel
import RuleEngine
import RuleLanguage
import Simulator
import TestSupport
import Testing

import struct StateStore.PartitionSet

/// Care-staff commands in partitioned mode (`--store postgres://… --partitions P`), on a real
/// nats-server and PostgreSQL: every instance receives every command; an acknowledgement is
/// answered by the owner of its user's partition, a silence by its team's decider (the owner of
/// the partition the team id falls in), and the other instances' shards apply the silence.
@Suite(.serialized) struct PartitionedCommandsTests {
    static let user = "jamie-plateau"

    /// A partitioned mobilityd with a care-teams file, and its metrics port.
    struct Instance {
        let process: ChildProcess
        let metricsPort: Int
        let name: String

        init(_ name: String, broker: [String], store: String, partitions: Int, careTeams: String, intake: PartitionFailoverTests.Intake) throws {
            metricsPort = try freePort()
            self.name = name
            let state = TemporaryPath.make("mw-state")
            process = try ChildProcess(
                ChildProcess.product("mobilityd"),
                broker + [
                    "--rules", RepoPaths.rules, "--state", state, "--clock", "event", "--instance", name,
                    "--metrics-address", "127.0.0.1:\(metricsPort)", "--publish-series", "false", "--log-level", "debug",
                    "--store", store, "--partitions", String(partitions), "--lease", "2", "--care-teams", careTeams, "--intake", intake.description
                ])
        }

        func metrics() -> [String: Double] {
            guard let r = httpGet(port: metricsPort, path: "/metrics"), r.status == 200 else { return [:] }
            return (try? parsePrometheus(r.body)) ?? [:]
        }

        func metric(_ key: String) -> Double { metrics()[key] ?? 0 }

        /// Nothing queued or in a shard's hands, every output acknowledged by the broker.
        var idle: Bool {
            let m = metrics()
            return !m.isEmpty && m["mobilityd_outputs_unacknowledged"] == 0
                && m.filter { $0.key.hasPrefix("mobilityd_queue_depth") || $0.key.hasPrefix("mobilityd_shard_busy_seconds") }.values.allSatisfy { $0 == 0 }
        }
    }

    /// mobilityctl under MQTT 3.1.1 (NATS 2.9's MQTT listener speaks no MQTT 5).
    func ctl(_ args: [String]) throws -> ChildProcess { try ChildProcess(ChildProcess.product("mobilityctl"), args + ["--mqtt-version", "3.1.1"]) }

    func reasons(_ rec: MQTTRecorder, command: String) -> [String] {
        rec.messages(prefix: "mobility/v1/").filter { $0.topic.hasSuffix("rejected") }.compactMap { m in
            guard case .success(let v) = JSONValue.parse(m.payload), v["command"] == .string(command), case .string(let r)? = v["reason"] else { return nil }
            return r
        }
    }

    /// Two instances on two partitions, one each: the team's silences are decided by one, the
    /// user's alerts made and acknowledged by the other. A silence added with `mobilityctl` is
    /// answered once and marks the user's firing alert on the other instance, whose reminders are
    /// then withheld; `mobilityctl ack` prints the answer, applied once (one audit row, the
    /// retained alert acknowledged on the user's topic and the team copy); a malformed command
    /// is refused once; an expiry reaches both; after a `kill -9` of the owner the survivor
    /// answers the user's acknowledgements from the store. Before: no instance took any command
    /// (`mobilityctl silence add` timed out). On both intakes: the JetStream intake's on the
    /// node file as shipped, the MQTT sessions' with its documented edit.
    @Test(arguments: PartitionFailoverTests.Intake.allCases)
    func commandsAreAnsweredOnceByTheOwningInstanceAndSilencesReachEveryInstance(intake: PartitionFailoverTests.Intake) throws {
        let scenario = try Scenario.load(RepoPaths.root + "/simulator/scenarios/jamie-plateau.scenario")
        let records = ScenarioVerifier.traffic([scenario])
        let program = try #require(Checker.check(RuleSet.load([RepoPaths.rules]).sources).program)
        let expected = ScenarioVerifier.replay(records, program: program).filter { $0.rule == "stalled_recovery" }
        let fired = try #require(expected.first { $0.status == .firing && !$0.isRepeat })
        #expect(expected.contains { $0.id == fired.id && $0.isRepeat }, "the story reminds at least once")
        #expect(!expected.contains { $0.id == fired.id && $0.status.isEnded }, "the story ends firing")

        // Two partitions, one an instance: a team falling in the other partition than the user
        // is decided by the instance that does not own the user.
        let two = PartitionSet(count: 2, owned: [0])
        let team = try #require((0..<64).map { "ward-\($0)" }.first { two.partition(of: $0) != two.partition(of: Self.user) })
        let dir = TemporaryPath.make("mw-pcmd")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let teamsFile = dir + "/care-teams"
        try "\(Self.user) \(team)\n".write(toFile: teamsFile, atomically: true, encoding: .utf8)
        chmod(teamsFile, 0o600)

        let server = try PostgresServer.shared()
        let store = try server.createDatabase()
        let database = String(store.split(separator: "/").last!)
        let nats = try NATSCluster(size: 1, partitions: 2, edits: intake.edits)
        // A recorder per filter: NATS backs each filter of a session with a consumer of its own, so
        // a barrier is in order with its own filter's messages only.
        let rec = try nats.recorder(0, filters: ["mobility/v1/teams/#"])
        let alerts = try nats.recorder(0, filters: ["mobility/v1/users/+/alerts/#"])
        let auditRec = try nats.recorder(0, filters: ["mobility/v1/audit"])
        let barrier = { try rec.barrier() && alerts.barrier() && auditRec.barrier() }
        let pub = try nats.recorder(0, filters: [])
        let a = try Instance("a", broker: nats.daemonArguments(0), store: store, partitions: 2, careTeams: teamsFile, intake: intake)
        let b = try Instance("b", broker: nats.daemonArguments(0), store: store, partitions: 2, careTeams: teamsFile, intake: intake)
        defer {
            _ = a.process.stop(signal: SIGKILL)
            _ = b.process.stop(signal: SIGKILL)
        }
        // One partition each, each run subscribed to the commands.
        func held(_ i: Instance) -> String {
            (try? server.psql(
                "SELECT string_agg(partition::text, ',' ORDER BY partition) FROM partitions WHERE lease_until > now() AND owner LIKE '\(i.name)@%'",
                database: database))
                ?? ""
        }
        #expect(
            eventually(timeout: 40) {
                held(a).count == 1 && held(b).count == 1 && a.metric("mobilityd_broker_subscribed") == 1 && b.metric("mobilityd_broker_subscribed") == 1
            },
            "\(a.process.log)\n\(b.process.log)")
        let (owner, decider) = held(a) == String(two.partition(of: Self.user)) ? (a, b) : (b, a)
        #expect(held(decider) == String(two.partition(of: team)))
        let audit = { auditRec.messages().map(\.text) }
        let both = { (key: String) in a.metric(key) + b.metric(key) }

        // A silence through mobilityctl: answered once, by the decider; the owner takes it from the store.
        let add = try ctl(
            [
                "silence", "add"
            ] + nats.ctlArguments(0) + [
                "--team", team, "user=\(Self.user)", "rule=stalled_recovery", "--duration", "2d",
                "--comment", "inpatient until Thursday", "--author", "dr.lee"
            ])
        #expect(add.wait() == 0, "\(add.log)\n\(a.process.log)\n\(b.process.log)")
        let id = try #require(add.log.split(separator: "\n").first { $0.count == 16 }.map(String.init), "\(add.log)")
        #expect(decider.metric("mobilityd_silence_commands_total{result=\"accepted\"}") == 1)
        #expect(eventually { owner.metric("mobilityd_silence_commands_total{result=\"other_instance\"}") == 1 })
        #expect(eventually { owner.metric("mobilityd_silences{state=\"active\"}") == 1 }, "the owner learns the decider's silence")

        // The story, on the owner's partition: its firing is marked with the silence, its reminders withheld.
        for r in records { try pub.publish(r.topic, String(decoding: r.payload, as: UTF8.self)) }
        #expect(eventually(timeout: 90) { owner.metric("mobilityd_messages_received_total") == Double(records.count) && owner.idle })
        #expect(decider.metric("mobilityd_messages_received_total") == 0)
        #expect(try barrier())
        let userTopic = alertTopic(Self.user, "stalled_recovery")
        let teamTopic = "mobility/v1/teams/\(team)/users/\(Self.user)/alerts/stalled_recovery"
        for topic in [userTopic, teamTopic] {
            let seen = (topic == userTopic ? alerts : rec).messages(prefix: topic).compactMap { AlertTransition.parse($0.payload) }.filter { $0.id == fired.id }
            #expect(seen.count == 1 && seen[0].status == .firing && !seen[0].isRepeat && seen[0].silencedBy == [id], "\(topic): \(seen.map(\.json))")
        }
        #expect(owner.metric("mobilityd_alert_notifications_silenced_total") >= 1)

        // mobilityctl ack against the cluster: the owner answers; applied once.
        let ack = try ctl(
            [
                "ack"
            ] + nats.ctlArguments(0) + [
                "--team", team, "--user", Self.user, "--alert", fired.id, "--by", "nurse.kim", "--note", "called Jamie"
            ])
        #expect(ack.wait() == 0, "\(ack.log)\n\(owner.process.log)")
        #expect(ack.log.contains("stalled_recovery of \(Self.user) (\(fired.id)) acknowledged by nurse.kim"), "\(ack.log)")
        #expect(eventually { owner.idle && decider.idle })
        #expect(try barrier())
        for topic in [userTopic, teamTopic] {
            let acked = (topic == userTopic ? alerts : rec).messages(prefix: topic).compactMap { AlertTransition.parse($0.payload) }.filter {
                $0.acknowledged != nil
            }
            #expect(acked.count == 1 && acked[0].id == fired.id && acked[0].acknowledged?.by == "nurse.kim", "\(topic): \(acked.map(\.json))")
        }
        #expect(owner.metric("mobilityd_acknowledgements_total{result=\"accepted\"}") == 1)
        #expect(decider.metric("mobilityd_acknowledgements_total{result=\"other_instance\"}") == 1)
        #expect(audit().filter { $0.contains("\"action\":\"acknowledge\"") }.count == 1, "\(audit())")

        // A malformed command names no user: the team's decider alone refuses it.
        try pub.publish("mobility/v1/teams/\(team)/commands/ack", "{not json")
        #expect(eventually { reasons(rec, command: "ack") == ["malformed_json"] })
        #expect(eventually { owner.metric("mobilityd_acknowledgements_total{result=\"other_instance\"}") == 1 })
        #expect(both("mobilityd_acknowledgements_total{result=\"malformed_json\"}") == 1)

        // Expired through mobilityctl: one clear, one audit row; the owner drops it too.
        let expire = try ctl(["silence", "expire"] + nats.ctlArguments(0) + ["--team", team, "--author", "dr.lee", id])
        #expect(expire.wait() == 0, "\(expire.log)")
        #expect(eventually { owner.metric("mobilityd_silences{state=\"active\"}") == 0 && decider.metric("mobilityd_silences{state=\"active\"}") == 0 })
        #expect(eventually { owner.idle && decider.idle })
        #expect(try barrier())
        #expect(rec.messages(prefix: "mobility/v1/teams/\(team)/silences/\(id)").filter(\.payload.isEmpty).count == 1)
        #expect(audit().filter { $0.contains("\"action\":\"silence\"") }.count == 1, "\(audit())")
        #expect(audit().filter { $0.contains("\"action\":\"expire\"") }.count == 1, "\(audit())")
        #expect(reasons(rec, command: "ack") == ["malformed_json"] && reasons(rec, command: "silence").isEmpty)

        // kill -9 of the owner: the decider takes the user's partition (lease 2 s) and answers its
        // acknowledgements from the store: the acknowledgement stands.
        owner.process.signal(SIGKILL)
        _ = owner.process.wait()
        let killed = Date()
        #expect(eventually(timeout: 20) { held(decider) == "0,1" && decider.metric("mobilityd_broker_subscribed") == 1 }, "\(decider.process.log)")
        var again: ChildProcess?
        var attempts = 0
        #expect(
            eventually(timeout: 30) {
                // Sent again until a run holding the partition answers (a hand-over answers nothing).
                attempts += 1
                again = try? ctl(["ack"] + nats.ctlArguments(0) + ["--team", team, "--user", Self.user, "--alert", fired.id, "--by", "dr.lee", "--wait", "3"])
                return again?.wait() == 1 && again?.log.contains("refused (already_acknowledged)") == true
            }, "\(again?.log ?? "")\n\(decider.process.log)")
        #expect(audit().filter { $0.contains("\"action\":\"acknowledge\"") }.count == 1, "\(audit())")
        print("after kill -9 of the owner: answered by the survivor \(String(format: "%.1f", Date().timeIntervalSince(killed))) s later, attempt \(attempts)")
        #expect(decider.process.stop() == 0)
    }
}
