import MobilityModel
import Testing

@testable import MobilityDaemon

/// Who acts on a care-staff command: the login of a person's command topic, else the payload's claim.
struct StaffCommandTopicTests {
    let prefix = "mobility/v1/teams/"

    @Test func topicsOfEveryShape() {
        func parse(_ t: String, _ kind: String = "ack") -> StaffCommandTopic? { StaffCommandTopic.parse(prefix + t, prefix: prefix, kind: kind) }
        #expect(parse("ward-a/commands/ack") == StaffCommandTopic(team: "ward-a", login: nil))
        #expect(parse("ward-a/commands/ack/nurse.kim") == StaffCommandTopic(team: "ward-a", login: "nurse.kim"))
        #expect(parse("ward-a/commands/silence/nurse.kim", "silence") == StaffCommandTopic(team: "ward-a", login: "nurse.kim"))
        #expect(parse("ward a/commands/ack/nurse.kim") == StaffCommandTopic(team: nil, login: "nurse.kim"))
        // Deeper than a login: the rest is the login, which no valid login matches (refused by the
        // desk, not journalled as an input).
        let deep = parse("ward-a/commands/ack/nurse.kim/x")
        #expect(deep == StaffCommandTopic(team: "ward-a", login: "nurse.kim/x"))
        #expect(!StaffCommandTopic.isValidLogin(deep?.login ?? ""))
        // Not a command topic of this kind: left to whoever owns it.
        for t in ["ward-a/commands/rejected", "ward-a/commands/silence/nurse.kim", "ward-a/audit", "ward-a/commands"] {
            #expect(parse(t) == nil, "\(t)")
        }
        #expect(StaffCommandTopic.parse("other/ward-a/commands/ack", prefix: prefix, kind: "ack") == nil)
    }

    @Test(arguments: [("nurse.kim", true), ("kim@ward", true), ("a_b-c", true), ("", false), ("nurse kim", false), ("kim\u{1b}", false), ("ü", false)])
    func logins(_ login: String, _ valid: Bool) {
        #expect(StaffCommandTopic.isValidLogin(login) == valid)
    }

    @Test func theLoginActsAndAClaimOfSomeoneElseIsRefused() {
        let payload = { (by: String?) in Array(("{\"alert\":\"0123abcd\",\"user\":\"jamie\"" + (by.map { ",\"by\":\"\($0)\"" } ?? "") + "}").utf8) }
        #expect((try? AcknowledgementCommand.parse(team: "ward-a", payload: payload(nil), login: "nurse.kim").get())?.by == "nurse.kim")
        #expect((try? AcknowledgementCommand.parse(team: "ward-a", payload: payload("nurse.kim"), login: "nurse.kim").get())?.by == "nurse.kim")
        guard case .failure(let r) = AcknowledgementCommand.parse(team: "ward-a", payload: payload("dr.house"), login: "nurse.kim") else {
            Issue.record("a claim of someone else was taken")
            return
        }
        #expect(r.refusal == .invalidField && r.message.contains("sent as nurse.kim"))
        // On the team topic the claim is who acts, and it is required.
        #expect((try? AcknowledgementCommand.parse(team: "ward-a", payload: payload("dr.house")).get())?.by == "dr.house")
        guard case .failure(let missing) = AcknowledgementCommand.parse(team: "ward-a", payload: payload(nil)) else {
            Issue.record("a command without anyone acting was taken")
            return
        }
        #expect(missing.refusal == .missingField)
    }

    @Test func silencesTakeTheLoginAsTheirAuthor() throws {
        let now = Timestamp(milliseconds: 1_780_000_000_000)
        let add = { (by: String?) in
            Array(
                ("{\"action\":\"add\",\"matchers\":[{\"name\":\"user\",\"value\":\"jamie\",\"isRegex\":false,\"isEqual\":true}],"
                    + "\"endsAt\":\"2026-05-30T00:00:00Z\",\"comment\":\"x\"" + (by.map { ",\"createdBy\":\"\($0)\"" } ?? "") + "}").utf8)
        }
        func parse(_ p: [UInt8]) -> Result<SilenceCommand, SilenceCommand.Rejection> {
            SilenceCommand.parse(team: "ward-a", payload: p, now: now, labelNames: [], login: "nurse.kim")
        }
        guard case .success(.add(let s)) = parse(add(nil)) else { Issue.record("\(parse(add(nil)))"); return }
        #expect(s.createdBy == "nurse.kim")
        guard case .failure(let r) = parse(add("dr.house")) else { Issue.record("a claim of someone else was taken"); return }
        #expect(r.reason == "invalid_field" && r.message.contains("'createdBy'"))
        let expire = Array("{\"action\":\"expire\",\"id\":\"0123456789abcdef\",\"by\":\"dr.house\"}".utf8)
        guard case .failure(let e) = parse(expire) else { Issue.record("a claim of someone else was taken"); return }
        #expect(e.reason == "invalid_field")
        guard case .success(.expire(_, let by)) = parse(Array("{\"action\":\"expire\",\"id\":\"0123456789abcdef\"}".utf8)) else {
            Issue.record("an expire on the login's topic without by was refused")
            return
        }
        #expect(by == "nurse.kim")
    }
}
