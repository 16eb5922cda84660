import Foundation
import MobilityModel
import TestSupport
import Testing

/// The console in real headless Chromium (Tests/Browser/console-walk.py, over the DevTools
/// protocol): a nurse of ward-a signs in, sees only ward-a's patients with the stalled recovery
/// first, opens it, acknowledges its alert, silences it, records an injury and signs out; the
/// broker's audit, the retained alert and silence, the stored timeline and the FHIR Observation of
/// the injury show each action under her login. The browser keeps the `Secure` session cookie on plain-HTTP loopback, scripts
/// cannot read it, and it is gone after sign-out. Screenshots (list and patient page, desktop and
/// phone) go to `MW_CONSOLE_SHOTS` when set.
@Suite(.serialized) struct ConsoleBrowserTests {
    @Test func aNurseWorksThroughTheConsoleInChromium() throws {
        let ward = try ConsoleWard(fhir: true)
        let rec = try MQTTRecorder(
            url: ward.broker.url, filters: ["mobility/v1/audit", "mobility/v1/teams/ward-a/#", "mobility/v1/fhir/users/ward-stalled/Observation/#"])
        let shots = ProcessInfo.processInfo.environment["MW_CONSOLE_SHOTS"] ?? TemporaryPath.make("mw-console-shots")
        try FileManager.default.createDirectory(atPath: shots, withIntermediateDirectories: true)
        let today = LocalCalendar.utc.day(of: Timestamp(milliseconds: Int64(Date().timeIntervalSince1970 * 1000)))
        let walk = try ChildProcess(
            "/usr/bin/python3",
            [
                RepoPaths.root + "/Tests/Browser/console-walk.py", ward.base, "nurse.kim", ConsoleWard.passwords["nurse.kim"]!, shots,
                CivilDate(dayNumber: today - 3).description
            ])
        #expect(walk.wait(timeout: 120) == 0, "\(walk.log)")
        let line = try #require(walk.log.split(separator: "\n").last { $0.hasPrefix("{") })
        guard case .success(let seen) = JSONValue.parse(Array(line.utf8)) else {
            Issue.record("not JSON: \(line)")
            return
        }
        func text(_ key: String) -> String? { if case .string(let s)? = seen[key] { s } else { nil } }
        func strings(_ key: String) -> [String] {
            guard case .array(let a)? = seen[key] else { return [] }
            return a.compactMap { if case .string(let s) = $0 { s } else { nil } }
        }
        #expect(text("error") == nil, "\(line)")
        #expect(text("firstUrl") == "/console/sign-in")
        #expect(text("afterSignIn") == "/console")
        #expect(strings("rows").first == "ward-stalled", "\(line)")
        #expect(Set(strings("rows")) == ["ward-stalled", "ward-normal", "ward-quiet"], "\(line)")
        #expect(strings("stale").contains { $0.hasPrefix("no data for ") }, "\(line)")
        #expect(text("patientUrl") == "/console/patients/ward-stalled")
        #expect(text("afterAck") == "Acknowledged.", "\(line)")
        #expect(text("afterSilence") == "Silenced.", "\(line)")
        #expect(text("afterInjury") == "Recorded.", "\(line)")
        #expect(text("afterSignOut") == "/console/sign-in")
        #expect(text("afterSignOutConsole") == "/console/sign-in")
        #expect(text("spanRefusal")?.contains("“To (for a span, optional)” is before “On (or from)”") == true, "\(line)")
        #expect(text("askedSignedOut") == "/console/sign-in?next=/console/patients/ward-stalled", "\(line)")
        #expect(text("afterReturn") == "/console/patients/ward-stalled", "\(line)")
        // The browser kept the Secure, HttpOnly session cookie over plain-HTTP loopback; no script saw it.
        #expect(line.contains("\"name\": \"__Host-mw_console\"") && line.contains("\"secure\": true") && line.contains("\"httpOnly\": true"), "\(line)")
        #expect(text("scriptCookie") == "")
        guard case .array(let after)? = seen["cookiesAfterSignOut"] else {
            Issue.record("the walk did not report the cookies after sign-out: \(line)")
            return
        }
        #expect(after.isEmpty, "\(line)")

        // Each action under nurse.kim's login: the audit, the retained alert and silence, the stored entry.
        #expect(try rec.barrier())
        let audit = rec.messages(prefix: "mobility/v1/audit").map(\.text)
        #expect(audit.count == 3, "\(audit)")
        for (action, row) in zip(["acknowledge", "silence", "add_event"], audit) {
            #expect(row.contains("\"action\":\"\(action)\"") && row.contains("\"by\":\"nurse.kim\"") && row.contains("\"team\":\"ward-a\""), "\(row)")
        }
        #expect(rec.messages(prefix: "mobility/v1/teams/ward-a/users/ward-stalled/alerts/").last?.text.contains("\"by\":\"nurse.kim\"") == true)
        #expect(rec.messages(prefix: "mobility/v1/teams/ward-a/silences/").last?.text.contains("\"createdBy\":\"nurse.kim\"") == true)
        let events = try Curl.get(ward.base + "/api/v1/users/ward-stalled/events", headers: ["Authorization: Bearer \(ConsoleSignInTests.token)"])
        #expect(events.body.contains("\"note\":\"fell in the garden\""), "\(events.body)")
        #expect(events.body.contains("\"by\":\"nurse.kim\""), "\(events.body)")
        let fhir = rec.messages(prefix: "mobility/v1/fhir/users/ward-stalled/Observation/").map(\.text).filter { $0.contains("fell in the garden") }
        #expect(fhir.count == 1 && fhir[0].contains("nurse.kim"), "\(fhir)")
        for png in ["console-list.png", "console-list-phone.png", "console-patient.png", "console-patient-phone.png"] {
            let bytes = FileManager.default.contents(atPath: shots + "/" + png) ?? Data()
            #expect(bytes.starts(with: [0x89, 0x50, 0x4e, 0x47]), "\(png)")
        }
    }
}
