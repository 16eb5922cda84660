/// A proleptic Gregorian calendar date, convertible to and from a day number.
package struct CivilDate: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The year, e.g. 2026.
    package var year: Int
    /// The month, 1–12.
    package var month: Int
    /// The day of the month, 1–31.
    package var day: Int

    /// Creates a date from its fields (not validated; see ``init(parsing:)``).
    package init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// Parses `YYYY-MM-DD`.
    package init?(parsing s: Substring) {
        let parts = s.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]),
            (1...12).contains(m), d >= 1, d <= CivilDate.daysInMonth(year: y, month: m)
        else { return nil }
        self.init(year: y, month: m, day: d)
    }

    /// Days since 1970-01-01 (negative before). Howard Hinnant's `days_from_civil`.
    package var dayNumber: Int32 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return Int32(era * 146_097 + doe - 719_468)
    }

    /// The date of a day number. Howard Hinnant's `civil_from_days`.
    package init(dayNumber: Int32) {
        let z = Int(dayNumber) + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        self.init(year: yoe + era * 400 + (m <= 2 ? 1 : 0), month: m, day: d)
    }

    /// The number of days in a month.
    package static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Earlier dates sort first.
    package static func < (a: CivilDate, b: CivilDate) -> Bool { a.dayNumber < b.dayNumber }

    /// `YYYY-MM-DD`.
    package var description: String {
        let y = String(year)
        return String(repeating: "0", count: max(0, 4 - y.count)) + y + "-" + ISO8601.pad2(month) + "-" + ISO8601.pad2(day)
    }
}
