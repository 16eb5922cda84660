import Foundation
import Glibc
import TestSupport
import Testing

/// `mobility-sim` against the shipped TLS + password broker (`ShippedDeployment`: deploy/'s
/// mosquitto.conf, mosquitto.acl and mobilityd.conf.example): one gateway login per user from a
/// `--credentials` file, the dashboard account for alerts, and clear errors for what cannot work.
@Suite(.serialized) struct SimulatorSecuredBrokerTests {
    let sim = ChildProcess.product("mobility-sim")
    let scenarios = RepoPaths.root + "/simulator/scenarios"
    var plateau: String { scenarios + "/jamie-plateau.scenario" }  // user jamie-plateau
    var newWatch: String { scenarios + "/uncalibrated-watch.scenario" }  // user new-watch
    var dataGap: String { scenarios + "/data-gap.scenario" }  // user data-gap

    func tls(_ d: ShippedDeployment, _ credentials: String) -> [String] {
        ["--broker", d.tlsURL, "--ca-file", d.ca, "--credentials", credentials]
    }

    /// A recorded traffic file of two users is played through the broker to mobilityd, each user
    /// on its own login; then a scenario is played with `--resend`, which reads each user's own
    /// `acks` (the only acks its account may read) until every sample is acknowledged.
    @Test func playsRecordingsAndScenariosWithOneLoginPerUser() throws {
        let d = try ShippedDeployment(gateways: ["jamie-plateau", "new-watch", "data-gap"])
        try d.startDaemon()
        let file = d.dir + "/traffic.jsonl"
        let record = try ChildProcess(sim, ["record", plateau, newWatch, "-o", file])
        #expect(record.wait() == 0, "\(record.log)")
        let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").count
        #expect(lines > 100)

        let creds = try d.credentialsFile(["jamie-plateau", "new-watch", "data-gap"])
        let play = try ChildProcess(sim, ["play", file] + tls(d, creds))
        #expect(play.wait(timeout: 120) == 0, "\(play.log)")
        #expect(play.log.contains("published \(lines) messages (\(lines) acknowledged)"), "\(play.log)")
        #expect(
            eventually(timeout: 30) { d.metrics()["mobilityd_messages_received_total"] == Double(lines) },
            "mobilityd received \(String(describing: d.metrics()["mobilityd_messages_received_total"])) of \(lines)")

        let resend = try ChildProcess(sim, ["play", dataGap, "--resend"] + tls(d, creds))
        #expect(resend.wait(timeout: 120) == 0, "\(resend.log)")
        #expect(resend.log.contains("every user's samples acknowledged"), "\(resend.log)")
        #expect(!resend.log.contains("re-sending"), "\(resend.log)")  // the acks arrived: nothing was lost
    }

    /// Shipped scenarios pass `verify` through the shipped broker: gateways publish as their
    /// users, the `care-dashboard` account reads the alerts.
    @Test func verifyPassesShippedScenariosThroughTheShippedDeployment() throws {
        let d = try ShippedDeployment(gateways: ["jamie-plateau", "new-watch"])
        // The example runs `clock = wall`: days close by today's date, so a scenario's history
        // (2026-01-01 on) would be rejected as too late. `verify` replays history and needs days
        // closed by each user's own event time, `clock = event`: the one line substituted here.
        try d.startDaemon(edit: [("clock = wall", "clock = event")])
        let creds = try d.credentialsFile(["jamie-plateau", "new-watch", "care-dashboard"])
        let verify = try ChildProcess(sim, ["verify", plateau, newWatch] + tls(d, creds))
        #expect(verify.wait(timeout: 180) == 0, "\(verify.log)\n\(d.daemon!.log.suffix(2000))")
        #expect(verify.log.contains("2 passed, 0 failed"), "\(verify.log)")
        #expect(verify.log.contains("stalled_recovery"), "\(verify.log)")
    }

    /// What cannot work fails before anything is published, with a message that says why: a user
    /// without a credentials line, a credentials file others can read, a password on the command
    /// line, no reader account for verify; a wrong password fails at login with exit 1.
    @Test func refusesWhatCannotWorkBeforePublishing() throws {
        let d = try ShippedDeployment(gateways: ["jamie-plateau", "new-watch"])
        // The daemon's subscriber account reads every user's inputs: it sees whatever gets through.
        let inputs = ["samples", "events", "deletions", "profile"].map { "mobility/v1/users/+/\($0)" }
        let observer = try d.client("mobilityd", filters: inputs)

        func run(_ args: [String]) throws -> (code: Int32, log: String) {
            let p = try ChildProcess(sim, args)
            let code = p.wait(timeout: 60)
            return (code, p.log)
        }
        let onlyPlateau = try d.credentialsFile(["jamie-plateau"])
        var r = try run(["play", plateau, newWatch] + tls(d, onlyPlateau))
        #expect(r.code == 2 && r.log.contains("no line for new-watch"), "\(r)")
        #expect(!r.log.contains(d.passwords["jamie-plateau"]!))

        r = try run(["verify", plateau] + tls(d, onlyPlateau))
        #expect(r.code == 2 && r.log.contains("no line for care-dashboard"), "\(r)")

        let loose = try d.credentialsFile(["jamie-plateau", "new-watch"], mode: 0o644)
        r = try run(["play", plateau] + tls(d, loose))
        #expect(r.code == 2 && r.log.contains("mode 0644") && r.log.contains("chmod 600"), "\(r)")

        r = try run(["play", plateau, "--broker", d.tlsURL, "--ca-file", d.ca, "--password", "x"])
        #expect(r.code == 2 && r.log.contains("--password is refused on the command line"), "\(r)")

        let wrong = try d.credentialsFile(["jamie-plateau", "new-watch"], wrong: ["new-watch"])
        r = try run(["play", plateau, newWatch] + tls(d, wrong))
        #expect(r.code == 1 && r.log.contains("the broker refused the login of new-watch"), "\(r)")
        #expect(!r.log.contains("not-the-password"))

        // A barrier: a sample of Alex's, which the observer gets after anything published above.
        let alex = try d.client("alex", filters: [])
        #expect(try alex.publishAwaitingAnswer(samplesTopic("alex"), sampleJSON(id: "barrier", value: 1.2, end: isoNow())) == 0)
        #expect(eventually { observer.messages().contains { $0.text.contains("barrier") } })
        // The wrong password stopped the whole run before its first publish, jamie-plateau's too.
        #expect(observer.messages().map(\.topic) == [samplesTopic("alex")], "\(observer.messages().map(\.topic))")
    }

    /// Under MQTT 5 a publish the broker refuses (here: a broker whose ACL lets gateways publish
    /// no events) is reported with its topic and reason and fails the run, instead of counting
    /// as acknowledged.
    @Test func reportsPublishesTheBrokerRefuses() throws {
        let d = try ShippedDeployment(editACL: [("pattern write mobility/v1/users/%u/events\n", "")], gateways: ["jamie-plateau"])
        let creds = try d.credentialsFile(["jamie-plateau"])
        let p = try ChildProcess(sim, ["play", plateau] + tls(d, creds))
        #expect(p.wait(timeout: 120) == 1, "\(p.log)")
        #expect(p.log.contains("refused by the broker (first: mobility/v1/users/jamie-plateau/events, reason 135"), "\(p.log)")
    }
}
