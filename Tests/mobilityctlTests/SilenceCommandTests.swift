import Foundation
import TestSupport
import Testing

/// `mobilityctl silence add` against a real mobilityd: a refusal is printed with the daemon's
/// reason as soon as it comes (not after the wait, as "no answer"), and a silence naming another
/// team's patient is refused as an acknowledgement of that patient's alert is.
@Suite(.serialized) struct SilenceCommandTests {
    @Test func refusalsArePrintedAtOnceWithTheDaemonsReason() throws {
        let broker = try MosquittoBroker()
        let dir = TemporaryPath.make("mw-silence-ctl")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let d = try Ctl.daemon(broker, dir: dir, careTeams: "jamie physio-north\nsam gait-lab\n")
        defer { d.stop() }
        func add(_ team: String, _ matcher: String) throws -> (Ctl.Run, TimeInterval) {
            let start = Date()
            let r = try Ctl.run([
                "silence", "add", "--broker", broker.url, "--team", team, matcher, "--duration", "2h", "--comment", "on the ward", "--author",
                "nurse.kim", "--wait", "30"
            ])
            return (r, Date().timeIntervalSince(start))
        }
        let cases = [
            ("physio-north", "ward=a", "refused (unknown_label): "),
            ("physio-north", "user=sam", "refused (unknown_user): team physio-north has no patient with this id"),
            ("physio-north", "user=nobody", "refused (unknown_user): team physio-north has no patient with this id"),
            ("nobody", "user=jamie", "refused (unknown_team): no user belongs to team nobody")
        ]
        for (team, matcher, message) in cases {
            let (r, seconds) = try add(team, matcher)
            #expect(r.status == 1 && r.stdout.isEmpty, "\(matcher): \(r.stdout)")
            #expect(r.stderr.contains("mobilityctl silence add: " + message), "\(matcher): \(r.stderr)")
            #expect(seconds < 10, "the answer, not the 30 s wait: \(seconds) s")
        }
        // A silence of the team's own patient is taken, and so is one of the team's rules.
        let (ok, _) = try add("physio-north", "user=jamie")
        #expect(ok.status == 0 && ok.stdout.count == 17, "\(ok.stderr)")
        let (rule, _) = try add("physio-north", "rule=stalled_recovery")
        #expect(rule.status == 0, "\(rule.stderr)")
    }
}
