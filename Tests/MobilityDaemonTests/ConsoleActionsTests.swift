import Foundation
import MobilityModel
import TestSupport
import Testing

/// The console's forms on a live ward: each action is taken by the desk the MQTT command goes
/// to and recorded under the signed-in login (audit, acknowledgement, silence, timeline entry);
/// each refusal shows the daemon's own reason; a forged form, an over-long field, control
/// characters and another team's patient change nothing; markup is shown as text.
@Suite(.serialized) struct ConsoleActionsTests {
    @Test func aNurseActsUnderHerOwnLogin() throws {
        let ward = try ConsoleWard()
        let rec = try MQTTRecorder(url: ward.broker.url, filters: ["mobility/v1/audit", "mobility/v1/teams/ward-a/#"])
        let kim = try ward.signIn("nurse.kim")
        let page = try ward.get("/console/patients/ward-stalled", kim)
        let csrf = try #require(ConsoleWard.csrf(page.body))
        let alert = try #require(page.body.firstMatch(of: /name="alert" value="([0-9a-f]+)"/).map { String($0.1) })
        let path = "/console/patients/ward-stalled"

        // Refused before anything: no token, a wrong one, a 1 MB field, control characters, another team.
        #expect(try ward.post(path + "/ack", [("alert", alert), ("note", "forged")], kim, csrf: nil).status == 403)
        #expect(try ward.post(path + "/ack", [("alert", alert), ("note", "forged")], kim, csrf: String(repeating: "0", count: 64)).status == 403)
        #expect(try ward.post(path + "/ack", [("alert", alert), ("note", String(repeating: "x", count: 1 << 20))], kim, csrf: csrf).status == 413)
        let control = try ward.post(path + "/ack", [("alert", alert), ("note", "seen\u{7}\u{1b}[2J")], kim, csrf: csrf)
        #expect(control.status == 409)
        #expect(control.body.contains("Refused (invalid_field): ") && control.body.contains("note"), "\(control.body)")
        let ray = try ward.signIn("nurse.ray")
        let rayPage = try ward.get("/console", ray)
        #expect(try ward.post(path + "/ack", [("alert", alert)], ray, csrf: ConsoleWard.csrf(rayPage.body)).status == 404)
        #expect(try rec.barrier())
        #expect(rec.messages(prefix: "mobility/v1/audit").isEmpty)

        // Acknowledge with a note (markup in it is text), silence, record an injury.
        let ack = try ward.post(path + "/ack", [("alert", alert), ("note", "<b>seen</b> & called")], kim, csrf: csrf)
        #expect(ack.status == 303, "\(ack.body)")
        #expect(ack.headers["location"] == path + "?done=ack")
        let again = try ward.post(path + "/ack", [("alert", alert)], kim, csrf: csrf)
        #expect(again.status == 409)
        #expect(again.body.contains("Refused (already_acknowledged): already acknowledged by nurse.kim"), "\(again.body)")
        let silence = try ward.post(path + "/silence", [("rule", "stalled_recovery"), ("hours", "24"), ("comment", "physio <i>on</i> leave")], kim, csrf: csrf)
        #expect(silence.status == 303, "\(silence.body)")
        let bell = try ward.post(path + "/silence", [("rule", "stalled_recovery"), ("hours", "24"), ("comment", "x\u{7}")], kim, csrf: csrf)
        #expect(bell.status == 409)
        #expect(bell.body.contains("Refused (invalid_field): "), "\(bell.body)")
        let long = try ward.post(path + "/silence", [("rule", "stalled_recovery"), ("hours", "169"), ("comment", "a week and an hour")], kim, csrf: csrf)
        #expect(long.status == 409 && long.body.contains("a silence lasts 1 hour to 7 days"), "\(long.body)")
        // The ward's data ends yesterday, and under the test's event clock so does the patients' today.
        let today = LocalCalendar.utc.day(of: Timestamp(milliseconds: Int64(Date().timeIntervalSince1970 * 1000)))
        let tomorrow = try ward.post(
            path + "/events", [("action", "add"), ("kind", "fall"), ("first", CivilDate(dayNumber: today + 1).description)], kim, csrf: csrf)
        #expect(tomorrow.status == 409)
        #expect(tomorrow.body.contains("Refused (date_out_of_range): "), "\(tomorrow.body)")
        let yesterday = CivilDate(dayNumber: today - 1).description
        let injury = try ward.post(path + "/events", [("action", "add"), ("kind", "fall"), ("first", yesterday), ("note", "fell at home")], kim, csrf: csrf)
        #expect(injury.status == 303, "\(injury.body)")
        let second = try ward.post(path + "/events", [("action", "add"), ("kind", "fall"), ("first", yesterday), ("note", "fell again")], kim, csrf: csrf)
        #expect(second.status == 303, "a second fall the same day: \(second.body)")

        let after = try ward.get(path, kim)
        #expect(after.body.contains("Acknowledged by nurse.kim."))
        #expect(after.body.contains("Silenced by nurse.kim."))
        #expect(after.body.contains("&lt;b&gt;seen&lt;/b&gt; &amp; called"), "\(after.body)")
        #expect(!after.body.contains("<b>seen</b>"))
        #expect(after.body.contains("physio &lt;i&gt;on&lt;/i&gt; leave"), "\(after.body)")
        for (field, value) in [("note", "fell\u{1b}[2J"), ("why", "typo\u{0}")] {
            let bad = try ward.post(
                path + "/events", [("action", "add"), ("kind", "fall"), ("first", CivilDate(dayNumber: today - 2).description), (field, value)], kim, csrf: csrf
            )
            #expect(bad.status == 409, "\(field)")
            #expect(bad.body.contains("Refused (invalid_text): "), "\(field): \(bad.body)")
        }
        // A refusal names the fields by the labels beside them on the page, not by the command's names.
        let noted = try ward.post(
            path + "/events", [("action", "add"), ("kind", "fall"), ("first", CivilDate(dayNumber: today - 2).description), ("note", "fell\u{1b}[2J")],
            kim, csrf: csrf)
        #expect(noted.body.contains("Refused (invalid_text): “Clinical note (optional)”"), "\(noted.body)")
        let backwards = try ward.post(
            path + "/events",
            [
                ("action", "add"), ("kind", "illness"), ("first", CivilDate(dayNumber: today - 2).description),
                ("last", CivilDate(dayNumber: today - 3).description)
            ],
            kim, csrf: csrf)
        #expect(backwards.body.contains("“To (for a span, optional)” is before “On (or from)”"), "\(backwards.body)")
        let silenced = try ward.post(path + "/silence", [("rule", ""), ("hours", "4"), ("comment", "")], kim, csrf: csrf)
        #expect(silenced.status == 409 && silenced.body.contains("“Why”") && !silenced.body.contains("'comment'"), "\(silenced.body)")
        #expect(after.body.contains("Entered by nurse.kim (ward-a)"), "\(after.body)")

        // The broker's audit shows each action under the login.
        #expect(try rec.barrier())
        let audit = rec.messages(prefix: "mobility/v1/audit").map(\.text)
        #expect(audit.count == 4, "\(audit)")
        for (action, row) in zip(["acknowledge", "silence", "add_event", "add_event"], audit) {
            #expect(row.contains("\"action\":\"\(action)\"") && row.contains("\"by\":\"nurse.kim\""), "\(row)")
        }
        let retained = rec.messages(prefix: "mobility/v1/teams/ward-a/users/ward-stalled/alerts/").last?.text ?? ""
        #expect(retained.contains("\"by\":\"nurse.kim\""), "\(retained)")
        let silenceTopic = rec.messages(prefix: "mobility/v1/teams/ward-a/silences/").last?.text ?? ""
        #expect(silenceTopic.contains("\"createdBy\":\"nurse.kim\""), "\(silenceTopic)")

        // End the silence.
        let id = try #require(after.body.firstMatch(of: /name="id" value="([0-9a-f]{16})"/).map { String($0.1) })
        #expect(try ward.post(path + "/silence/expire", [("id", id)], kim, csrf: csrf).status == 303)
        #expect(try ward.post(path + "/silence/expire", [("id", id)], kim, csrf: csrf).status == 404)

        // Correct the fall's day, then retract it; an unknown entry is the daemon's refusal.
        // Two entries, each with an id of the one format (``TimelineEvent/newID()``).
        let falls = after.body.matches(
            of: /value="correct"\/><input type="hidden" name="id" value="(entry-[0-9a-f]{16})"\/><input type="hidden" name="kind" value="fall"\//
        )
        .map { String($0.1) }
        #expect(Set(falls).count == 2, "\(falls)")
        let entry = try #require(falls.first), before = CivilDate(dayNumber: today - 4).description
        let corrected = try ward.post(
            path + "/events", [("action", "correct"), ("id", entry), ("kind", "fall"), ("first", before), ("why", "date from the GP letter")], kim,
            csrf: csrf)
        #expect(corrected.status == 303, "\(corrected.body)")
        #expect(try ward.get(path, kim).body.contains("fall (clinical event), \(before)"))
        #expect(try ward.post(path + "/events", [("action", "retract"), ("id", entry), ("why", "entered twice")], kim, csrf: csrf).status == 303)
        let gone = try ward.post(path + "/events", [("action", "retract"), ("id", entry)], kim, csrf: csrf)
        #expect(gone.status == 404)
        #expect(gone.body.contains("Refused (unknown_entry): "), "\(gone.body)")
        #expect(try rec.barrier())
        let rows = rec.messages(prefix: "mobility/v1/audit").map(\.text)
        #expect(rows.count == 7, "\(rows)")
        for (action, row) in zip(["expire", "correct_event", "retract_event"], rows.suffix(3)) {
            #expect(row.contains("\"action\":\"\(action)\"") && row.contains("\"by\":\"nurse.kim\""), "\(row)")
        }
        // The record form drawn on a page carries its entry's id: the same form sent twice (a
        // double click, a resend) is one entry, the second answered entry_exists.
        let drawn = try ward.get(path, kim).body
        let drawnID = try #require(
            drawn.firstMatch(of: /value="add"[^<]*<input type="hidden" name="id" value="(entry-[0-9a-f]{16})"/).map { String($0.1) }, "\(drawn)")
        let form = [("action", "add"), ("id", drawnID), ("kind", "fall"), ("first", CivilDate(dayNumber: today - 3).description)]
        #expect(try ward.post(path + "/events", form, kim, csrf: csrf).status == 303)
        let resent = try ward.post(path + "/events", form, kim, csrf: csrf)
        #expect(resent.status == 409 && resent.body.contains("entry_exists"), "\(resent.body)")
        #expect(
            try ward.get(path, kim).body.firstMatch(of: /value="add"[^<]*<input type="hidden" name="id" value="(entry-[0-9a-f]{16})"/).map { String($0.1) }
                != drawnID, "a fresh id per page")
    }
}
