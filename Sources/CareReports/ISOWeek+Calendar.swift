import MobilityModel

/// ISO 8601 week arithmetic on local day numbers: weeks start on Monday, and week 1 of a year is
/// the week with its Thursday (so 2026-12-28…2027-01-03 is 2026-W53, and 2027-01-04 starts W01).
extension ISOWeek {
    /// The weekday of a day, Monday 0 … Sunday 6 (day 0, 1970-01-01, was a Thursday).
    package static func weekday(_ d: DayNumber) -> Int {
        let r = (Int(d) + 3) % 7
        return r < 0 ? r + 7 : r
    }

    /// The week containing a day.
    package init(containing d: DayNumber) {
        let thursday = d - DayNumber(ISOWeek.weekday(d)) + 3
        let year = CivilDate(dayNumber: thursday).year
        let jan1 = CivilDate(year: year, month: 1, day: 1).dayNumber
        self.init(year: year, week: Int(thursday - jan1) / 7 + 1)
    }

    /// Parses `2026-W10` (week 1…53, and 53 only in a year that has it).
    package init?(parsing s: String) {
        let parts = s.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 4, parts[0].allSatisfy({ $0.isASCII && $0.isNumber }), parts[1].count == 3, parts[1].first == "W",
            let y = Int(parts[0]), let w = Int(parts[1].dropFirst()), parts[1].dropFirst().allSatisfy({ $0.isASCII && $0.isNumber }),
            w >= 1, w <= ISOWeek.weeks(in: y)
        else { return nil }
        self.init(year: y, week: w)
    }

    /// How many ISO weeks a year has (52 or 53): the week of 28 December.
    package static func weeks(in year: Int) -> Int { ISOWeek(containing: CivilDate(year: year, month: 12, day: 28).dayNumber).week }

    /// Its Monday.
    package var monday: DayNumber {
        let jan4 = CivilDate(year: year, month: 1, day: 4).dayNumber
        return jan4 - DayNumber(ISOWeek.weekday(jan4)) + DayNumber(7 * (week - 1))
    }

    /// Its Sunday.
    package var sunday: DayNumber { monday + 6 }

    /// The week before.
    package var previous: ISOWeek { ISOWeek(containing: monday - 7) }

    /// The week after.
    package var next: ISOWeek { ISOWeek(containing: monday + 7) }
}
