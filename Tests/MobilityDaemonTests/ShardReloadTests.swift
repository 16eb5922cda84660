import Foundation
import MobilityModel
import MobilityWire
import RuleLanguage
import TestSupport
import Testing

@testable import MobilityDaemon

/// A reload of a shard run in-process (``ShardHarness``). (Through SIGHUP and a restart of the
/// real daemon: ``AlertLifecycleDaemonTests``.)
@Suite struct ShardReloadTests {
    /// A reload that removes a firing rule: its instance expires (it is not resolved: nothing
    /// showed its condition false), saying why, and its retained state is cleared; the firing
    /// gauge forgets the rule.
    @Test func reloadThatRemovesAFiringRuleExpiresItAndClearsTheRetainedTopic() throws {
        let rules = TemporaryPath.make("mw-rules")
        try FileManager.default.copyItem(atPath: RepoPaths.rules, toPath: rules)
        try FileManager.default.removeItem(atPath: rules + "/six_minute_walk.rules")
        // report.rules names the six-minute-walk series and rule: the set would not check without them
        try FileManager.default.removeItem(atPath: rules + "/report.rules")
        let reduced = try #require(Checker.check(RuleSet.load([rules]).sources).program)

        let h = try ShardHarness(dir: TemporaryPath.make("mw-reload"))
        defer { h.stop() }
        let rule = "uncalibrated_6mwd", topic = alertTopic("lee", rule)
        h.send([(samplesTopic("lee"), sampleJSON(id: "l1", type: "sixMinuteWalkTestDistance", value: 500, unit: "m", end: "2026-02-01T08:00:00Z"))])
        let firing = try JSONValue.parse(try #require(h.published.retained()[topic])).get()
        #expect(h.stats.firing[rule] == 1)

        h.reload(reduced)
        let msgs = h.published.messages(prefix: topic)
        try #require(msgs.count == 3)
        let expired = try JSONValue.parse(msgs[1].payload).get()
        #expect(expired["status"] == .string("expired"))
        #expect(expired["reason"] == .string("rule_removed"))
        #expect(expired["id"] == firing["id"])
        #expect(!msgs[1].retain && msgs[2].retain && msgs[2].payload.isEmpty)
        #expect(h.published.retained()[topic] == nil, "nothing retained for a later subscriber")
        #expect(h.stats.alerts[rule]?[.expired] == 1)
        #expect(h.stats.firing[rule] == nil)
    }
}
