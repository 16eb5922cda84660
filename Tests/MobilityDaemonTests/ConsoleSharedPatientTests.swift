import Foundation
import TestSupport
import Testing

/// A patient shared by two teams on the console: each team's nurse sees, ends and counts only her
/// own team's silences, since the other team is still notified of what its silence withholds.
@Suite(.serialized) struct ConsoleSharedPatientTests {
    @Test func aSharedPatientShowsEachTeamOnlyItsOwnSilences() throws {
        let ward = try ConsoleWard(shared: true)
        let path = "/console/patients/ward-stalled"
        let kim = try ward.signIn("nurse.kim"), ray = try ward.signIn("nurse.ray")
        let kimPage = try ward.get(path, kim)
        let kimCSRF = try #require(ConsoleWard.csrf(kimPage.body))
        let silence = try ward.post(path + "/silence", [("rule", "stalled_recovery"), ("hours", "24"), ("comment", "ward-a's reason")], kim, csrf: kimCSRF)
        #expect(silence.status == 303, "\(silence.body)")
        let kimID = try #require(try ward.get(path, kim).body.firstMatch(of: /name="id" value="([0-9a-f]{16})"/).map { String($0.1) })

        // ward-b is still notified: the alert stays open for ray, and nothing of ward-a's silence shows.
        let rayPage = try ward.get(path, ray)
        #expect(rayPage.status == 200)
        for leak in [kimID, "ward-a's reason", "Silenced by nurse.kim", "Team ward-a"] {
            #expect(!rayPage.body.contains(leak), "\(leak): \(rayPage.body)")
        }
        #expect(rayPage.body.contains("/console/patients/ward-stalled/silence\""), "no silence form for ward-b: \(rayPage.body)")
        let rayList = try ward.get("/console?show=open", ray)
        #expect(rayList.body.contains("href=\"/console/patients/ward-stalled\""), "\(rayList.body)")
        #expect(!rayList.body.contains("silenced by nurse.kim"), "\(rayList.body)")
        let kimList = try ward.get("/console?show=open", kim)
        #expect(!kimList.body.contains("href=\"/console/patients/ward-stalled\""), "\(kimList.body)")
        let rayCSRF = try #require(ConsoleWard.csrf(rayPage.body))
        #expect(try ward.post(path + "/silence/expire", [("id", kimID)], ray, csrf: rayCSRF).status == 404)

        // ray's own silence is ward-b's: he sees it and ends it; ward-a's stays.
        let own = try ward.post(path + "/silence", [("rule", "stalled_recovery"), ("hours", "4"), ("comment", "ward-b's reason")], ray, csrf: rayCSRF)
        #expect(own.status == 303, "\(own.body)")
        let after = try ward.get(path, ray).body
        let ids = after.matches(of: /name="id" value="([0-9a-f]{16})"/).map { String($0.1) }
        #expect(ids.count == 1 && !ids.contains(kimID), "\(after)")
        #expect(after.contains("Silenced by nurse.ray.") && !after.contains("by nurse.kim"), "\(after)")
        let rayID = try #require(ids.first)
        let ended = try ward.post(path + "/silence/expire", [("id", rayID)], ray, csrf: rayCSRF)
        #expect(ended.status == 303, "\(ended.body)")
        #expect(try ward.get(path, kim).body.contains(kimID))
    }
}
