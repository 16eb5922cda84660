import Foundation
import MobilityModel
import MobilityWire
import StateStore
import TestSupport
import Testing

@testable import MobilityDaemon

/// The silence desk in-process over a real SQLite store, on a time the test sets: no broker, no
/// process. (End to end, with mobilityctl and restarts: ``SilenceDaemonTests``.)
@Suite struct SilenceDeskTests {
    static let commands = "mobility/v1/teams/physio-north/commands/silence"
    static let start = Timestamp(milliseconds: 1_775_048_400_000)  // 2026-04-01T13:00:00Z
    static func at(seconds: Int64) -> Timestamp { Timestamp(milliseconds: start.milliseconds + seconds * 1000) }

    static func desk(_ out: ShardHarness.Published) throws -> SilenceDesk {
        let dir = TemporaryPath.make("mw-silence-desk")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let desk = SilenceDesk(
            layout: TopicLayout(), store: try StateStore(path: dir + "/state.sqlite"), sink: out,
            teams: CareTeams(assigned: ["jamie": ["physio-north"]]), log: Logger(format: .logfmt, level: .error), labelNames: { [] },
            publishNow: { topic, payload in _ = out.publish([.init(topic: topic, payload: payload, retain: false)]) })
        try desk.restore()
        return desk
    }

    /// The audit messages' actions and actors, in order.
    static func audit(_ out: ShardHarness.Published) throws -> [String] {
        try out.messages(prefix: "mobility/v1/audit").map { m in
            let j = try JSONValue.parse(m.payload).get()
            guard case .string(let action)? = j["action"], case .string(let by)? = j["by"] else { return "?" }
            return action + " by " + by
        }
    }

    /// A short silence ends on its own when the clock reaches its end: its retained topic is
    /// cleared and the expiry audited as by mobilityd; not a tick before.
    @Test func aSilenceEndsOnItsOwnWhenTheClockReachesItsEnd() throws {
        let out = ShardHarness.Published()
        let desk = try Self.desk(out)
        let add = SilenceDaemonTests.add("{\"name\":\"rule\",\"value\":\"data_gap\"}", ends: Self.at(seconds: 2).description)
        desk.received(topic: Self.commands, payload: Array(add.utf8), now: Self.start)
        #expect(try Self.audit(out) == ["silence by nurse.kim"])
        let retained = out.retained(prefix: "mobility/v1/teams/physio-north/silences/")
        #expect(retained.count == 1)
        let topic = try #require(retained.keys.first)
        #expect(String(decoding: retained[topic] ?? [], as: UTF8.self).contains("\"state\":\"active\""))

        desk.tick(now: Self.at(seconds: 1))
        #expect(try Self.audit(out) == ["silence by nurse.kim"])
        #expect(out.retained()[topic] != nil)

        desk.tick(now: Self.at(seconds: 2))
        #expect(try Self.audit(out) == ["silence by nurse.kim", "expire by mobilityd"])
        #expect(out.retained()[topic] == nil)
        #expect(out.messages(prefix: "mobility/v1/teams/physio-north/commands/rejected").isEmpty)
    }
}
