import Foundation
import TestSupport
import Testing

/// The console's patient page on a live ward: what needs attention, the recovery charts, the
/// weekly reports, the timeline and the alert history; another team's patient, and a user id
/// nobody knows, are the same 404 on every console route.
@Suite(.serialized) struct ConsolePatientTests {
    @Test func thePatientPageShowsTheStalledRecovery() throws {
        let ward = try ConsoleWard()
        let kim = try ward.signIn("nurse.kim")
        let page = try ward.get("/console/patients/ward-stalled", kim)
        #expect(page.status == 200)
        for part in [
            "<h1>ward-stalled</h1>", "<h2>Needs attention</h2>", "stalled recovery (fired ", "<h2>Recovery</h2>", "<svg", "<h2>Weekly reports</h2>",
            "<h2>Timeline</h2>", "injury (clinical event)", "<h2>Alert history</h2>"
        ] {
            #expect(page.body.contains(part), "\(part)")
        }
        #expect(!page.body.contains("<script"))
        #expect(!page.body.contains("<style"))
        guard let week = page.body.firstMatch(of: /report\?week=(\d{4}-W\d{2})/)?.1 else {
            Issue.record("no weekly report link")
            return
        }
        let report = try ward.get("/console/patients/ward-stalled/report?week=\(week)", kim)
        #expect(report.status == 200)
        #expect(report.body.contains("Weekly report of ward-stalled"))

        let ray = try ward.signIn("nurse.ray")
        let theirs = try ward.get("/console/patients/ward-stalled", ray)
        let nobody = try ward.get("/console/patients/no-such-patient", ray)
        #expect(theirs.status == 404)
        #expect(nobody.status == 404)
        #expect(theirs.body == nobody.body)
        #expect(try ward.get("/console/patients/ward-stalled/report?week=\(week)", ray).status == 404)
        #expect(!theirs.body.contains("ward-a"))
    }
}
