import CareReports
import MobilityModel
import Testing

/// The research export's CSV (RFC 4180) and its rows: quoting, lists, missing values, the days a
/// user's rows span, and numbers whatever the locale.
@Suite struct ResearchTableTests {
    @Test(arguments: [
        ("plain", "plain"),
        ("", ""),
        ("a,b", "\"a,b\""),
        ("say \"hi\"", "\"say \"\"hi\"\"\""),
        ("two\nlines", "\"two\nlines\""),
        ("cr\r", "\"cr\r\""),
        ("o'neil; ward 2", "o'neil; ward 2")
    ])
    func fieldsAreQuotedOnlyWhenTheyMustBe(_ c: (String, String)) {
        #expect(CSVText.field(c.0) == c.1)
    }

    @Test func aRecordEndsWithCRLFAndUnknownIsEmpty() {
        #expect(CSVText.record(["u1", nil, "1.5", "a,b"]) == "u1,,1.5,\"a,b\"\r\n")
    }

    @Test func listsSeparateBySemicolonAndEscapeIt() {
        #expect(CSVText.list([]) == nil)
        #expect(CSVText.list(["fall", "note"]) == "fall;note")
        #expect(CSVText.list(["a;b", #"c\d"#, ""]) == #"a\;b;c\\d;"#)
    }

    @Test func rowsSpanTheUsersDaysWithTheTimelineOnItsDays() throws {
        let d0 = try #require(CivilDate(parsing: "2026-03-01")).dayNumber
        var h = UserHistory(user: "jamie")
        // Stored in SI (the history's form), 1.31 m/s; day 2 missing; day 3 not recorded; day 4 in mph.
        h.series["speed_p95"] = [d0: 1.31, d0 + 1: Double?.none, d0 + 3: 1.0]
        h.units["speed_p95"] = "m/s"
        h.series["speed_mph"] = [d0 + 3: 0.44704 * 2.5]
        h.units["speed_mph"] = "mph"
        h.timeline = [
            TimelineEvent(id: "inj-1", category: .clinical, kind: "injury", firstDay: d0 + 1, lastDay: d0 + 1),
            TimelineEvent(
                id: "heat", category: .annotation, kind: "heat_wave", firstDay: d0 + 2, lastDay: d0 + 9, note: "not exported",
                entered: EntryAttribution(by: "nurse.kim", team: "north", at: Timestamp(milliseconds: 0)))
        ]
        var withdrawn = AlertEpisode(id: "w", rule: "recovery_setback", severity: .info, firedDay: d0, endedDay: nil, headline: "")
        withdrawn.withdrawnDay = d0 + 2
        h.alerts = [
            AlertEpisode(id: "a1", rule: "stalled_recovery", severity: .warning, firedDay: d0 + 1, endedDay: d0 + 3, headline: ""),
            AlertEpisode(id: "a0", rule: "data_gap", severity: .info, firedDay: d0 + 2, endedDay: nil, headline: ""), withdrawn
        ]
        let table = ResearchTable(series: [("speed_p95", "m/s"), ("speed_mph", "mph")])
        #expect(
            table.header == [
                "user", "day", "recorded", "speed_p95", "speed_mph", "clinical_events", "clinical_event_ids", "clinical_events_entered_by",
                "annotations", "annotation_ids", "annotations_entered_by", "alerts_firing", "alert_ids"
            ])
        let rows = table.rows(h, from: .min, through: .max)
        #expect(rows.count == 4, "from the first to the last recorded day; the annotation's later days are past the user's rows")
        // Alerts from the day they fired to the day before they ended, a withdrawn one never.
        #expect(rows[0] == ["jamie", "2026-03-01", "1", "1.31", nil, nil, nil, nil, nil, nil, nil, nil, nil])
        #expect(rows[1] == ["jamie", "2026-03-02", "1", nil, nil, "injury", "inj-1", "", nil, nil, nil, "stalled_recovery", "a1"])
        #expect(rows[2] == ["jamie", "2026-03-03", "0", nil, nil, nil, nil, nil, "heat_wave", "heat", "nurse.kim", "data_gap;stalled_recovery", "a0;a1"])
        #expect(rows[3] == ["jamie", "2026-03-04", "1", "1", "2.5", nil, nil, nil, "heat_wave", "heat", "nurse.kim", "data_gap", "a0"])
        #expect(rows.allSatisfy { !$0.contains("not exported") })
        let ranged = table.rows(h, from: d0 + 1, through: d0 + 2)
        #expect(ranged.map { $0[1] } == ["2026-03-02", "2026-03-03"])
        #expect(table.rows(UserHistory(user: "nobody"), from: .min, through: .max).isEmpty)
    }

    /// An alert that fires and ends on the same day (a calibration reminder answered that day) is
    /// firing on that day, and only on it.
    @Test func anAlertEndedOnItsFiringDayIsFiringThatDay() throws {
        let d0 = try #require(CivilDate(parsing: "2026-03-01")).dayNumber
        var h = UserHistory(user: "jamie")
        h.series["speed_p95"] = [d0: 1.2, d0 + 1: 1.3, d0 + 2: 1.4]
        h.units["speed_p95"] = "m/s"
        h.alerts = [
            AlertEpisode(id: "c1", rule: "uncalibrated_6mwd", severity: .info, firedDay: d0 + 1, endedDay: d0 + 1, headline: ""),
            AlertEpisode(id: "g1", rule: "data_gap", severity: .info, firedDay: d0, endedDay: d0 + 1, headline: "")
        ]
        let rows = ResearchTable(series: [("speed_p95", "m/s")]).rows(h, from: .min, through: .max)
        #expect(rows.map { $0[1] } == ["2026-03-01", "2026-03-02", "2026-03-03"])
        #expect(rows.map { $0[ResearchTable.leadingColumns.count + 1 + ResearchTable.timelineColumns.count] } == ["data_gap", "uncalibrated_6mwd", nil])
        #expect(rows.map { $0.last! } == ["g1", "c1", nil])
    }
}
