import Foundation
import MobilityModel
import MobilityWire
import PostgresStore
import RuleLanguage
import StateStore
import Synchronization
import TestSupport
import Testing

@testable import MobilityDaemon

/// A deposed instance (its partitions taken over: every write fenced) that still receives a
/// command says nothing: the new owner received the same command and answers it, and a
/// `store_unavailable` from the old one would contradict that answer (mobilityctl takes the
/// first). The desks over a real PostgreSQL; the sink and the refusals captured.
@Suite struct FencedCommandTests {
    final class Captured: OutputSink, @unchecked Sendable {
        let topics = Mutex<[String]>([])
        func publish(_ items: [StateStore.OutboxItem]) -> Int {
            topics.withLock { $0 += items.map(\.topic) }
            return 0
        }
        func now(_ topic: String, _: [UInt8]) { topics.withLock { $0.append(topic) } }
        var all: [String] { topics.withLock { $0 } }
    }

    static let now = Timestamp(milliseconds: Int64(Date().timeIntervalSince1970 * 1000))
    static let silence = Array(
        """
        {"action":"add","matchers":[{"name":"user","value":"jamie"}],"endsAt":"\(Timestamp(milliseconds: now.milliseconds + 86_400_000))",\
        "createdBy":"dr.lee","comment":"inpatient"}
        """.utf8)

    func results(_ m: MetricsText) throws -> [String: Double] { try parsePrometheus(m.text) }

    @Test func aDeposedInstanceLeavesItsSilencesAndAcknowledgementsToTheNewOwner() throws {
        let server = try PostgresServer.shared()
        let url = try server.createDatabase()
        let parts = PartitionSet(count: 2, owned: [0, 1])
        let deposed = try PostgresStore(url: url, owner: "a", partitions: parts)
        let owner = try PostgresStore(url: url, owner: "b", partitions: parts)  // takes both over: a's tokens are stale
        let program = try #require(Checker.check(RuleSet.load([RepoPaths.rules]).sources).program)
        let rule = try #require(program.alerts.first)
        let ack = try AcknowledgementCommand.parse(team: "ward", payload: Array(#"{"alert":"00000000deadbeef","user":"jamie","by":"nurse.kim"}"#.utf8)).get()
        let log = Logger(format: .logfmt, level: .error)
        let teams = CareTeams(assigned: ["jamie": ["ward"]])

        func desks(_ store: PostgresStore) -> (SilenceDesk, AcknowledgementDesk, Captured) {
            let out = Captured()
            let scope = CommandScope(partitions: parts)
            let s = SilenceDesk(
                layout: TopicLayout(), store: store, sink: out, teams: teams, log: log, scope: scope, labelNames: { [] }, publishNow: out.now)
            let a = AcknowledgementDesk(layout: TopicLayout(), store: store, sink: out, teams: teams, log: log, scope: scope, publishNow: out.now)
            return (s, a, out)
        }

        // Deposed: nothing published, nothing refused, each counted as left to another instance.
        let (s1, a1, out1) = desks(deposed)
        s1.received(topic: "mobility/v1/teams/ward/commands/silence", payload: Self.silence, now: Self.now)
        a1.acknowledge(ack, instance: (rule, Self.now.milliseconds - 1000, Self.now.milliseconds), now: Self.now)
        #expect(out1.all.isEmpty, "\(out1.all)")
        var m1 = MetricsText()
        s1.metrics(into: &m1, now: Self.now)
        a1.metrics(into: &m1)
        let r1 = try results(m1)
        #expect(r1["mobilityd_silence_commands_total{result=\"other_instance\"}"] == 1)
        #expect(r1["mobilityd_acknowledgements_total{result=\"other_instance\"}"] == 1)
        #expect(r1["mobilityd_silence_commands_total{result=\"store_unavailable\"}"] == 0)

        // The new owner takes the same commands: the silence and the acknowledgement are published.
        let (s2, a2, out2) = desks(owner)
        s2.received(topic: "mobility/v1/teams/ward/commands/silence", payload: Self.silence, now: Self.now)
        a2.acknowledge(ack, instance: (rule, Self.now.milliseconds - 1000, Self.now.milliseconds), now: Self.now)
        #expect(out2.all.filter { $0.hasPrefix("mobility/v1/teams/ward/silences/") }.count == 1, "\(out2.all)")
        #expect(out2.all.contains("mobility/v1/teams/ward/users/jamie/alerts/\(rule.name)"), "\(out2.all)")
        #expect(out2.all.filter { $0 == "mobility/v1/audit" }.count == 2, "\(out2.all)")
        #expect(!out2.all.contains { $0.hasSuffix("/commands/rejected") })
    }
}
