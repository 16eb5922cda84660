import Foundation
import MobilityModel
import MobilityWire
import TestSupport
import Testing

@testable import MobilityDaemon

/// The day the console's new-entry form offers (``TimelineDesk/today(of:at:)``) is the patient's
/// own today, one the daemon takes, from a shard run in-process on a manual clock
/// (``ShardHarness``: 2026-12-01T00:00Z, when it is still 30 November west of UTC).
@Suite struct TimelineDeskTodayTests {
    static func desk() -> TimelineDesk {
        TimelineDesk(layout: TopicLayout(), teams: CareTeams(), log: Logger(format: .logfmt, level: .error), publishNow: { _, _ in })
    }

    static func profile(_ user: String, _ zone: String) -> (topic: String, payload: String) {
        ("mobility/v1/users/\(user)/profile", "{\"timeZone\":\"\(zone)\",\"careTeams\":[\"ward-a\"]}")
    }

    /// Records an injury of `user` on `day` through the shard; the refusal's reason, nil when taken.
    static func record(_ h: ShardHarness, _ user: String, on day: DayNumber, id: String) throws -> String? {
        let json = #"{"action":"add","user":"\#(user)","entry":{"id":"\#(id)","kind":"injury","category":"clinical","date":"\#(CivilDate(dayNumber: day))"}}"#
        let c = try TimelineCommand.parse(Array(json.utf8)).get()
        let r = TimelineRequest(command: c, by: "nurse.kim", team: "", viaMQTT: false, answer: TimelineAnswer())
        h.shard.queue.push(.timeline(r))
        switch r.answer.wait(seconds: 30) {
        case .accepted?: return nil
        case .refused(let refusal)?: return refusal.reason
        case nil: throw HarnessError("no answer")
        }
    }

    @Test func aPatientWestOfUTCIsOfferedTheirOwnToday() throws {
        let dir = TemporaryPath.make("mw-today")
        let desk = Self.desk()
        let h = try ShardHarness(dir: dir, timelines: desk)
        h.send([Self.profile("west", "America/Los_Angeles"), Self.profile("east", "Asia/Tokyo")])
        let utcToday = LocalCalendar.utc.day(of: ShardHarness.wall)
        #expect(CivilDate(dayNumber: utcToday) == CivilDate(year: 2026, month: 12, day: 1))
        let offered = desk.today(of: "west", at: ShardHarness.wall)
        #expect(CivilDate(dayNumber: offered) == CivilDate(year: 2026, month: 11, day: 30))
        #expect(desk.today(of: "east", at: ShardHarness.wall) == utcToday)  // 09:00 in Tokyo
        #expect(desk.today(of: "nobody-yet", at: ShardHarness.wall) == utcToday)  // the default zone (UTC)
        // The daemon takes the day offered, and refuses the UTC date for this patient.
        #expect(try Self.record(h, "west", on: offered, id: "inj-1") == nil)
        #expect(try Self.record(h, "west", on: utcToday, id: "inj-2") == "date_out_of_range")
        h.stop()

        // After a restart the restored state gives the same day.
        let again = Self.desk()
        let restarted = try ShardHarness(dir: dir, timelines: again)
        defer { restarted.stop() }
        #expect(again.today(of: "west", at: ShardHarness.wall) == offered)
        // A profile that moves the patient to UTC gives UTC's day.
        restarted.send([Self.profile("west", "UTC")])
        #expect(again.today(of: "west", at: ShardHarness.wall) == utcToday)
    }
}
