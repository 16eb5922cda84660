import Foundation
import MobilityModel
import RuleEngine
import RuleLanguage
import StateStore
import TestSupport
import Testing

/// mobilityd refuses to start on a stored state it cannot read (exit 1, the user and the tag in
/// the log) instead of guessing: an unknown alert-state tag used to be restored as firing.
@Suite struct CorruptStateStartupTests {
    @Test func anUnknownAlertStateTagStopsTheDaemonWithExitOne() throws {
        let state = TemporaryPath.make("mw-corrupt")
        defer { try? FileManager.default.removeItem(atPath: state) }
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let path = state + "/state.sqlite"
        do {
            let p = try #require(Checker.check(text: "series s = mean(walkingSpeed)\nalert slow_walk { when s < 1 m/s }").program)
            var e = Engine(program: p)
            var out: [EngineOutput] = []
            let t = Timestamp(seconds: 20_500 * 86_400 + 36_000)
            e.ingest(Sample(id: "a", metric: .walkingSpeed, value: 0.5, start: t, end: t), user: "patient-7", now: t, into: &out)
            e.advance(to: t.adding(seconds: 2 * 86_400), into: &out)
            try #require(e.state(of: "patient-7")?.alerts["slow_walk"]?.isFiring == true)
            _ = try StateStore(path: path).commit(
                users: [.init(user: "patient-7", appliedSeq: 0, eventNow: nil, state: e.changes(of: "patient-7"))],
                outbox: [])
        }
        // The byte after the rule's name is its alert-state tag: 2 (firing) becomes 3.
        #expect(try StoredStateTampering.setAlertStateTag(database: path, user: "patient-7", rule: "slow_walk", to: 3) == 2)

        // No broker is needed: the state is read before connecting (port 9 is never listened on).
        let daemon = try ChildProcess(
            ChildProcess.product("mobilityd"),
            [
                "--broker", "mqtt://127.0.0.1:9", "--rules", RepoPaths.rules, "--state", state, "--clock", "event", "--metrics-address", "off"
            ])
        #expect(daemon.wait(timeout: 20) == 1, "\(daemon.log)")
        #expect(
            daemon.log.contains("cannot read the state store") && daemon.log.contains("id hash") && !daemon.log.contains("patient-7")
                && daemon.log.contains("unknown alert state of rule slow_walk tag 3"), "\(daemon.log)")
    }
}
