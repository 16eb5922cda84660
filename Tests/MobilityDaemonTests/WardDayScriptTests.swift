import Foundation
import TestSupport
import Testing

/// `scripts/ward-day.sh`, the walk-through of docs/care-staff.md, run as a reader of that page
/// would (on the debug build): every step does what the page says it does.
@Suite(.serialized) struct WardDayScriptTests {
    @Test func theWalkThroughDoesWhatTheCareStaffPageSays() throws {
        let p = try ChildProcess(
            "/bin/bash", [RepoPaths.root + "/scripts/ward-day.sh"], environment: ["BIN": RepoPaths.root + "/.build/debug"])
        #expect(p.wait(timeout: 180) == 0, "\(p.log)")
        let log = p.log
        let firing = log.split(separator: "\n").filter { $0.range(of: "^[0-9a-f]{16}  stalled_recovery  jamie-plateau", options: .regularExpression) != nil }
        #expect(firing.count == 2, "\(log)")  // before and after the acknowledgement
        #expect(firing.first?.contains(" firing ") == true && firing.last?.contains(" acked by nurse.kim ") == true, "\(firing)")
        #expect(!log.contains("jamie-normal  "), "gait-lab's patient in physio-north's table:\n\(log)")
        #expect(log.contains("acknowledged by nurse.kim"), "\(log)")
        #expect(
            log.contains("mobilityctl ack: refused (unknown_alert): team physio-north has no firing alert instance with this id") && log.contains("(exit 1)"),
            "\(log)")
        #expect(log.contains("mobilityctl silence add: silence ") && log.contains("  physio-north  active  user=\"jamie-plateau\""), "\(log)")
        #expect(log.contains("acknowledge    nurse.kim  physio-north  jamie-plateau") && log.contains("silence        dr.lee     physio-north"), "\(log)")
        #expect(log.contains("mobilityctl event correct: corrected fall-1 of jamie-plateau by nurse.kim at "), "\(log)")
        #expect(log.contains("mobilityctl event add: refused (unknown_user): team physio-north has no patient with this id"), "\(log)")
        #expect(log.contains("  fall 2026-03-19 entered by nurse.kim (physio-north)") && !log.contains("  illness 2026-03-10 entered by"), "\(log)")
        #expect(log.contains("correct_event  nurse.kim  physio-north  jamie-plateau") && log.contains("retract_event  dr.lee     physio-north"), "\(log)")
        #expect(log.contains("GET /users/jamie-plateau/report: 200") && log.contains("GET /users/jamie-plateau/panel: 200"), "\(log)")
        #expect(log.contains("GET /users/jamie-normal/panel (gait-lab's patient): 404"), "\(log)")
        #expect(log.contains("Bundle (collection): Flag 1, Observation "), "\(log)")
        #expect(log.contains("Flag stalled_recovery: active"), "\(log)")
    }
}
