import Foundation
import Glibc
import MobilityModel
import TestSupport
import Testing

/// A team's account guessing at other patients through its own command topics: alert ids are a
/// public function of rule, user and start, so a guess may be right. Whatever it guesses (another
/// team's patient, a patient of no team, an alert that has resolved, a user nobody knows), the
/// answer is the refusal a nonsense id gets, word for word, and nothing changes: no
/// acknowledgement, no timeline entry, no expired silence.
@Suite(.serialized) struct TeamCommandGuessingTests {
    static let rejected = "mobility/v1/teams/ward-a/commands/rejected"

    /// A six-minute-walk estimate at the watch's 500 m cap (`uncalibrated_6mwd` fires), or a
    /// calibrated 400 m one (it resolves).
    static func walk(_ id: String, capped: Bool) -> String {
        sampleJSON(
            id: id, type: "sixMinuteWalkTestDistance", value: capped ? 500 : 400, unit: "m", end: isoNow(days: capped ? -0.5 : -0.25),
            metadata: capped ? nil : "{\"HKMetadataKeyAppleDeviceCalibrated\":true}")
    }

    /// The refusals on ward-a's `commands/rejected` as (command, subject, user) → (reason, message).
    static func refusals(_ rec: MQTTRecorder) -> [String: [String]] {
        var out: [String: [String]] = [:]
        for m in rec.messages(prefix: rejected) {
            guard case .success(let v) = JSONValue.parse(m.payload) else { continue }
            func s(_ k: String) -> String { if case .string(let x)? = v[k] { x } else { "" } }
            out[[s("command"), s("alert") + s("id") + s("silence"), s("user")].joined(separator: " ")] = [s("reason"), s("message")]
        }
        return out
    }

    @Test func anotherTeamsOrATeamlessPatientReadsAsANonsenseGuessAndNothingChanges() throws {
        let dir = TemporaryPath.make("mw-guess")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // ann is ward-a's (the guesser's) patient; bo and dee ward-b's; cy has no team at all.
        try "ann ward-a\nbo ward-b\ndee ward-b\n".write(toFile: dir + "/care-teams", atomically: true, encoding: .utf8)
        chmod(dir + "/care-teams", 0o600)
        let broker = try MosquittoBroker()
        let rec = try MQTTRecorder(url: broker.url, filters: ["mobility/v1/users/+/alerts/#", "mobility/v1/audit", "mobility/v1/teams/#"])
        let pub = try MQTTRecorder(url: broker.url, filters: [])
        let daemon = try DaemonUnderTest(
            broker: broker, state: dir + "/state", extra: ["--publish-series", "false", "--care-teams", dir + "/care-teams"])
        defer { daemon.process.stop() }
        let users = ["ann", "bo", "cy", "dee"]
        for u in users { try pub.publish(samplesTopic(u), Self.walk("\(u)-cap", capped: true)) }
        #expect(daemon.waitProcessed(4, timeout: 30) && daemon.waitIdle())
        func firing(_ u: String) -> AlertTransition? {
            rec.messages(prefix: alertTopic(u, "uncalibrated_6mwd")).compactMap { AlertTransition.parse($0.payload) }.first { $0.status == .firing }
        }
        #expect(eventually { users.allSatisfy { firing($0) != nil } })
        let ids = Dictionary(uniqueKeysWithValues: try users.map { u in (u, try #require(firing(u)).id) })
        // The ids are what anyone can compute from rule, user and start.
        let cy = try #require(firing("cy"))
        #expect(cy.id == AlertTransition.stableID(rule: "uncalibrated_6mwd", user: "cy", activeSince: cy.activeSince))
        // bo's alert resolves: the daemon remembers it as resolved.
        try pub.publish(samplesTopic("bo"), Self.walk("bo-cal", capped: false))
        #expect(eventually { rec.messages(prefix: alertTopic("bo", "uncalibrated_6mwd")).contains { AlertTransition.parse($0.payload)?.status == .resolved } })

        // Ward-a guesses. The baseline: a nonsense id for its own patient.
        func ack(_ alert: String, _ user: String) -> String { #"{"alert":"\#(alert)","user":"\#(user)","by":"mallory"}"# }
        let guesses: [(String, String)] = [
            ("00000000deadbeef", "ann"),  // nonsense, own patient
            (ids["dee"]!, "dee"),  // another team's firing alert
            (ids["bo"]!, "bo"),  // another team's resolved alert
            (ids["bo"]!, "ann"),  // the resolved id under the team's own patient
            (ids["cy"]!, "cy"),  // a patient of no team: the right id
            (ids["cy"]!, "ann"),
            ("00000000deadbeef", "nobody")  // a user nobody knows
        ]
        for (alert, user) in guesses { #expect(try pub.publishAwaitingAnswer("mobility/v1/teams/ward-a/commands/ack", ack(alert, user)) == 0) }
        // Timeline entries for patients of other teams, of no team, and for nobody.
        let day = String(isoNow(days: -1).prefix(10))
        for user in ["bo", "cy", "nobody"] {
            let event = #"{"action":"add","user":"\#(user)","by":"mallory","entry":{"id":"f","kind":"fall","category":"clinical","date":"\#(day)"}}"#
            #expect(try pub.publishAwaitingAnswer("mobility/v1/teams/ward-a/commands/event", event) == 0)
        }
        // Ward-b silences bo; ward-a tries to expire it by its id, and a nonsense id.
        let silence =
            #"{"action":"add","matchers":[{"name":"user","value":"dee"}],"endsAt":"\#(isoNow(days: 1))","createdBy":"nurse.bo","comment":"in hospital"}"#
        try pub.publish("mobility/v1/teams/ward-b/commands/silence", silence)
        #expect(eventually { rec.messages(prefix: "mobility/v1/teams/ward-b/silences/").count == 1 })
        let silenceID = String(try #require(rec.messages(prefix: "mobility/v1/teams/ward-b/silences/").first).topic.split(separator: "/").last!)
        for id in [silenceID, "00000000deadbeef"] {
            try pub.publish("mobility/v1/teams/ward-a/commands/silence", #"{"action":"expire","id":"\#(id)","by":"mallory"}"#)
        }

        #expect(eventually { Self.refusals(rec).count == guesses.count + 3 + 2 }, "\(Self.refusals(rec))")
        #expect(daemon.waitIdle())
        let r = Self.refusals(rec)
        let noAlert = ["unknown_alert", "team ward-a has no firing alert instance with this id"]
        for (alert, user) in guesses { #expect(r["ack \(alert) \(user)"] == noAlert, "\(alert) of \(user): \(r)") }
        let noPatient = ["unknown_user", "team ward-a has no patient with this id"]
        for user in ["bo", "cy", "nobody"] { #expect(r["event f \(user)"] == noPatient, "\(user): \(r)") }
        #expect(r["silence \(silenceID) "] == r["silence 00000000deadbeef "] && r["silence 00000000deadbeef "]?.first == "unknown_silence", "\(r)")

        // Nothing changed: no audit entry but ward-b's silence, no acknowledgement on any alert,
        // ward-b's silence still retained.
        let actions = rec.messages(prefix: "mobility/v1/audit").map { m in
            if case .success(let v) = JSONValue.parse(m.payload), case .string(let a)? = v["action"] { a } else { "?" }
        }
        #expect(actions == ["silence"], "\(actions)")
        #expect(rec.messages(prefix: "mobility/v1/users/").allSatisfy { AlertTransition.parse($0.payload)?.acknowledged == nil })
        #expect(daemon.metric("mobilityd_acknowledgements_total{result=\"accepted\"}") == 0)
        #expect(daemon.metric("mobilityd_timeline_commands_total{result=\"accepted\"}") == 0)
        #expect(rec.messages(prefix: "mobility/v1/teams/ward-b/silences/").map(\.payload.isEmpty) == [false])
    }
}
