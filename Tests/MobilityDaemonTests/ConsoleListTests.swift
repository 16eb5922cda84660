import Foundation
import TestSupport
import Testing

/// The console's patient list on a live ward: a nurse sees her teams' patients only, the stalled
/// recovery first, the patient whose phone went quiet marked "no data for N days", and the list
/// sorts and filters by links.
@Suite(.serialized) struct ConsoleListTests {
    @Test func aNurseSeesHerTeamsPatientsTheStalledOneFirst() throws {
        let ward = try ConsoleWard()
        let kim = try ward.signIn("nurse.kim")
        let list = try ward.get("/console", kim)
        #expect(list.status == 200)
        let rows = list.body.matches(of: /<a href="\/console\/patients\/([a-z-]+)">/).map { String($0.1) }
        #expect(rows.first == "ward-stalled", "\(rows)")
        #expect(Set(rows) == ["ward-stalled", "ward-normal", "ward-quiet"], "\(list.body)")
        // Its last day (12 days ago) stays open under the test's event clock (no later sample
        // closes it), so its last recorded day is 13 days ago; the wall clock closes it at midnight.
        #expect(list.body.contains("<td class=\"stale\">no data for 13 days</td>"), "\(list.body)")
        #expect(list.body.contains("injury, "), "\(list.body)")
        #expect(list.body.contains("<svg class=\"spark\""))
        #expect(!list.body.contains("<script"))

        let byPatient = try ward.get("/console?sort=patient", kim)
        let sorted = byPatient.body.matches(of: /<a href="\/console\/patients\/([a-z-]+)">/).map { String($0.1) }
        #expect(sorted == ["ward-normal", "ward-quiet", "ward-stalled"])
        let stale = try ward.get("/console?show=stale", kim)
        #expect(stale.body.matches(of: /<a href="\/console\/patients\/([a-z-]+)">/).map { String($0.1) } == ["ward-quiet"])
        #expect(try ward.get("/console?team=ward-b", kim).status == 404)
        #expect(try ward.get("/console?sort=height", kim).status == 400)

        let ray = try ward.signIn("nurse.ray")
        let theirs = try ward.get("/console", ray)
        #expect(theirs.body.matches(of: /<a href="\/console\/patients\/([a-z-]+)">/).map { String($0.1) } == ["ward-b-normal"])
    }
}
