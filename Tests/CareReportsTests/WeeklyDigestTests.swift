import CareReports
import MobilityModel
import Testing

/// The digest's numbers against values worked out by hand here (not by the digest's helpers).
@Suite struct WeeklyDigestTests {
    static func day(_ s: String) -> DayNumber { CivilDate(parsing: Substring(s))!.dayNumber }
    static let mph = DisplayUnit(symbol: "mph", factor: 1 / 0.44704)
    static let week = ISOWeek(parsing: "2026-W10")!  // Monday 2026-03-02
    static let mon = week.monday
    static let injury = day("2026-02-01")

    /// Speed: 1.30 m/s for the 30 days before the injury (1.00 before those, in an earlier
    /// segment cut by a fall), last week 0.90 on 5 days, this week 0.95 on Mon–Thu, missing Fri,
    /// Sat absent, 1.00 on Sun; the smoothed series rises 0.01 m/s a day over this week.
    static func history() -> UserHistory {
        var h = UserHistory(user: "jamie")
        var speed: [DayNumber: Double?] = [:], smooth: [DayNumber: Double?] = [:]
        for d in (injury - 40)..<(injury - 30) { speed[d] = 1.00 }
        for d in (injury - 30)..<injury { speed[d] = 1.30 }
        for d in (mon - 7)..<(mon - 2) { speed[d] = 0.90 }
        for d in mon..<(mon + 4) { speed[d] = 0.95 }
        speed[mon + 4] = .some(nil)
        speed[mon + 6] = 1.00
        for k in 0..<7 { smooth[mon + DayNumber(k)] = 0.90 + 0.01 * Double(k) }
        smooth[mon - 1] = 0.88
        h.series = [
            "speed_p95": speed, "speed_7d": smooth,
            "dev": [mon: 10, mon + 1: 20, mon + 2: Double?.none, mon - 1: 100], "user": [mon: 10],
            "clinic": [mon + 1: 380], "watch": [mon + 2: 420, mon + 5: 430, mon - 3: 400]
        ]
        h.timeline = [
            TimelineEvent(id: "f", category: .clinical, kind: "fall", firstDay: injury - 35, lastDay: injury - 35),
            TimelineEvent(id: "i", category: .clinical, kind: "injury", firstDay: injury, lastDay: injury),
            TimelineEvent(id: "h", category: .annotation, kind: "heat_wave", firstDay: mon - 3, lastDay: mon + 1),
            TimelineEvent(id: "p", category: .annotation, kind: "pain", firstDay: mon + 7, lastDay: mon + 8)
        ]
        h.alerts = [
            AlertEpisode(id: "a", rule: "stalled_recovery", severity: .warning, firedDay: mon - 10, endedDay: nil, headline: "s"),
            AlertEpisode(id: "b", rule: "uncalibrated_6mwd", severity: .info, firedDay: mon + 2, endedDay: mon + 5, headline: "u"),
            AlertEpisode(id: "c", rule: "data_gap", severity: .warning, firedDay: mon - 9, endedDay: mon + 3, headline: "g"),
            AlertEpisode(id: "d", rule: "data_gap", severity: .warning, firedDay: mon - 20, endedDay: mon - 1, headline: "old"),
            AlertEpisode(
                id: "e", rule: "explain", severity: .info, firedDay: mon + 1, endedDay: mon + 3, headline: "resolved numbers",
                firedHeadline: "Walking speed dipped by 0.05 m/s"),
            AlertEpisode(
                id: "f", rule: "stalled_recovery", severity: .warning, firedDay: mon - 30, endedDay: mon + 4, headline: "window ended",
                firedHeadline: "stalled", expired: true)
        ]
        return h
    }

    static let spec = ReportSpec(
        speed: .init(title: "Walking speed", daily: "speed_p95", smoothed: "speed_7d", baselineDays: 30, displayUnit: mph, baselineEvent: "injury"),
        sixMinuteWalk: .init(clinic: "clinic", watch: "watch", provisionalRule: "uncalibrated_6mwd", displayUnit: DisplayUnit(symbol: "m", factor: 1)),
        conditions: [
            .init(group: "source", label: "device", series: "dev"), .init(group: "source", label: "user_entered", series: "user"),
            .init(group: "other", label: "none", series: "absent")
        ],
        explanations: ["explain"])

    @Test func trendPanelFigures() throws {
        let d = WeeklyDigest.make(history: Self.history(), spec: Self.spec, week: Self.week)
        #expect(d.firstDay == Self.day("2026-03-02") && d.lastDay == Self.day("2026-03-08"))
        let m = try #require(d.metrics.first)
        let toMph = 1 / 0.44704
        // (4 × 0.95 + 1.00) / 5 days with data; Friday missing and Saturday unrecorded are without
        #expect(abs(m.thisWeek.dailyMean! - 0.96 * toMph) < 1e-9)
        #expect(m.thisWeek.daysWithData == 5 && m.thisWeek.daysWithoutData == 2)
        #expect(abs(m.thisWeek.smoothedLast! - 0.96 * toMph) < 1e-9)
        #expect(abs(m.lastWeek.dailyMean! - 0.90 * toMph) < 1e-9 && m.lastWeek.daysWithData == 5)
        #expect(abs(m.lastWeek.smoothedLast! - 0.88 * toMph) < 1e-9)
        // the 30 days before the injury, not the 1.00 of the segment before the fall
        #expect(abs(m.baseline! - 1.30 * toMph) < 1e-9)
        // 0.01 m/s a day is 0.07 m/s a week
        #expect(abs(m.trendPerWeek! - 0.07 * toMph) < 1e-9)
        #expect(m.unit.symbol == "mph" && !m.lowerIsBetter)
    }

    @Test func aBaselineWithoutItsEventAndATrendOnTooFewDaysAreUnknown() throws {
        var h = Self.history()
        h.timeline.removeAll { $0.kind == "injury" }
        h.series["speed_7d"] = [Self.mon: 1, Self.mon + 1: 1.1, Self.mon + 2: 1.2]
        let m = try #require(WeeklyDigest.make(history: h, spec: Self.spec, week: Self.week).metrics.first)
        #expect(m.baseline == nil && m.trendPerWeek == nil)
        let empty = try #require(WeeklyDigest.make(history: UserHistory(user: "x"), spec: Self.spec, week: Self.week).metrics.first)
        #expect(empty.thisWeek == .init(dailyMean: nil, smoothedLast: nil, daysWithData: 0, daysWithoutData: 7))
    }

    @Test func sixMinuteWalksAreProvisionalWhileTheRuleIsActive() throws {
        let s = try #require(WeeklyDigest.make(history: Self.history(), spec: Self.spec, week: Self.week).sixMinuteWalk)
        #expect(s.clinic == [.init(day: Self.mon + 1, value: 380)])
        // fired on Wednesday's estimate, resolved by Saturday's: Saturday's is not provisional
        #expect(s.watch == [.init(day: Self.mon + 2, value: 420, provisional: true), .init(day: Self.mon + 5, value: 430, provisional: false)])
    }

    @Test func conditionSharesSumOverTheWeekPerGroup() {
        let c = WeeklyDigest.make(history: Self.history(), spec: Self.spec, week: Self.week).conditions
        #expect(
            c == [
                .init(group: "source", label: "device", count: 30, share: 0.75), .init(group: "source", label: "user_entered", count: 10, share: 0.25),
                .init(group: "other", label: "none", count: 0, share: 0)
            ])
    }

    @Test func alertsAnnotationsAndExplanations() {
        let d = WeeklyDigest.make(history: Self.history(), spec: Self.spec, week: Self.week)
        // "f" ended by expiring (its window closed while it held): not a resolution
        #expect(d.alerts.map { "\($0.episode.id) \($0.state)" } == ["a active", "b fired", "c resolved", "e fired", "f expired"])
        #expect(d.annotations.map(\.id) == ["h"])
        #expect(d.explanations == ["Walking speed dipped by 0.05 m/s"])
    }

    /// A report quotes what an alert said up to the week's Sunday: a history rebuilt later (from
    /// traffic, or read after more reminders) holds later texts, which are not the week's. Before,
    /// the report quoted the latest reminder, weeks after the week it was about.
    @Test func aWeekQuotesWhatTheAlertSaidThatWeek() throws {
        let mon = Self.mon
        var h = UserHistory(user: "jamie")
        var e = AlertEpisode(id: "s", rule: "stalled_recovery", severity: .warning, firedDay: mon - 10, endedDay: nil, headline: "fired")
        e.texts = [
            .init(day: mon - 10, firing: true, headline: "fired"), .init(day: mon - 3, firing: true, headline: "reminder of last week"),
            .init(day: mon + 4, firing: true, headline: "reminder of this week"), .init(day: mon + 11, firing: true, headline: "reminder of next week"),
            .init(day: mon + 20, firing: false, headline: "expired later")
        ]
        e.endedDay = mon + 20
        e.expired = true
        h.alerts = [e]
        let d = WeeklyDigest.make(history: h, spec: Self.spec, week: Self.week)
        let a = try #require(d.alerts.first)
        #expect(a.state == .active && a.episode.endedDay == nil)
        #expect(a.episode.headline == "reminder of this week" && a.episode.firedHeadline == "reminder of this week")
        let earlier = try #require(WeeklyDigest.make(history: h, spec: Self.spec, week: ISOWeek(containing: mon - 7)).alerts.first)
        #expect(earlier.episode.headline == "reminder of last week")
        let last = try #require(WeeklyDigest.make(history: h, spec: Self.spec, week: ISOWeek(containing: mon + 20)).alerts.first)
        #expect(last.state == .expired && last.episode.headline == "expired later" && last.episode.firedHeadline == "reminder of next week")
    }

    @Test func theJSONRoundTripsAndIsStrict() throws {
        let d = WeeklyDigest.make(history: Self.history(), spec: Self.spec, week: Self.week)
        let back = try WeeklyDigest.decode(Array(d.json.utf8)).get()
        #expect(back.json == d.json)
        #expect(back.alerts.map(\.state) == d.alerts.map(\.state) && back.conditions == d.conditions && back.sixMinuteWalk == d.sixMinuteWalk)
        #expect(d.json.contains("\"week\":\"2026-W10\",\"firstDay\":\"2026-03-02\",\"lastDay\":\"2026-03-08\""))
        // An expired episode has no resolvedDay: its end is an expiredDay.
        #expect(d.json.contains("\"state\":\"expired\",\"id\":\"f\",") && d.json.contains("\"resolvedDay\":null,\"expiredDay\":\"2026-03-06\""))
        #expect(back.alerts.last?.episode.expired == true && back.alerts.last?.episode.endedDay == Self.mon + 4)
        func refused(_ text: String) -> String? {
            if case .failure(let e) = WeeklyDigest.decode(Array(text.utf8)) { return e.description }
            return nil
        }
        let j = d.json
        #expect(refused(j.replacingOccurrences(of: "\"user\":\"jamie\",", with: "\"user\":\"jamie\",\"extra\":1,")) == "unknown member 'extra'")
        #expect(refused(j.replacingOccurrences(of: "\"daysWithData\":5,", with: "")) == "metrics[0].thisWeek.daysWithData: missing")
        #expect(refused(j.replacingOccurrences(of: "2026-W10", with: "2026-W11")) == "firstDay: the week 2026-W11 runs from its Monday to its Sunday")
        #expect(
            refused(j.replacingOccurrences(of: "\"state\":\"fired\"", with: "\"state\":\"burning\""))
                == "alerts[1].state: expected fired, active, resolved, expired or withdrawn")
        #expect(
            refused(j.replacingOccurrences(of: "\"daysWithoutData\":2", with: "\"daysWithoutData\":3"))
                == "metrics[0].thisWeek.daysWithoutData: days with and without data must add up to 7")
        #expect(refused("[]") == "expected an object")
        #expect(refused("{") == "not JSON")
    }
}
