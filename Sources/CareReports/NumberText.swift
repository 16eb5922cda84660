import MobilityModel

/// Deterministic text for numbers and days on the pages (no locale, no clock).
enum NumberText {
    /// `v` with `decimals` digits after the point (`-0` shown as `0`), `–` when not finite.
    static func fixed(_ v: Double, _ decimals: Int) -> String {
        guard v.isFinite else { return "–" }
        let d = max(0, min(decimals, 6))
        var p = 1.0
        for _ in 0..<d { p *= 10 }
        let scaled = (abs(v) * p).rounded()
        guard scaled < 1e15 else { return v < 0 ? "-∞" : "∞" }
        let n = Int64(scaled)
        let whole = n / Int64(p)
        var s = (v < 0 && n != 0 ? "-" : "") + String(whole)
        if d > 0 {
            let frac = String(n % Int64(p))
            s += "." + String(repeating: "0", count: d - frac.count) + frac
        }
        return s
    }

    /// A coordinate: one decimal.
    static func coord(_ v: Double) -> String { fixed(v, 1) }

    /// `v` with an explicit sign (`+0.05`).
    static func signed(_ v: Double, _ decimals: Int) -> String {
        let s = fixed(v, decimals)
        return s.hasPrefix("-") || s == "–" ? s : "+" + s
    }

    /// `YYYY-MM-DD`.
    static func iso(_ d: DayNumber) -> String { CivilDate(dayNumber: d).description }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `Jan 5`: an axis label.
    static func short(_ d: DayNumber) -> String {
        let c = CivilDate(dayNumber: d)
        return months[c.month - 1] + " " + String(c.day)
    }

    /// `Mon` … `Sun` of a day (1970-01-01 was a Thursday).
    static func weekday(_ d: DayNumber) -> Int { Int(((Int64(d) % 7) + 7 + 3) % 7) }  // 0 = Monday

    /// A timeline kind for people: `heat_wave` → `heat wave`.
    static func kind(_ k: String) -> String { k.replacingUnderscores() }

    /// Who of the staff entered an entry and when, for its tooltip: `entered by nurse.kim
    /// (physio-north) on 2026-03-04 at 10:12 UTC`; nil for an entry of the patient's gateway.
    static func entered(_ e: TimelineEvent) -> String? {
        guard let a = e.entered else { return nil }
        let t = a.at.description  // 2026-03-04T10:12:05.123Z
        let time = t.count >= 16 ? " at \(t.dropFirst(11).prefix(5)) UTC" : ""
        return "entered by \(XMLText.bounded(a.by, limit: 100))" + (a.team.isEmpty ? "" : " (\(a.team))") + " on \(t.prefix(10))" + time
    }
}

extension String {
    /// `_` replaced by spaces.
    func replacingUnderscores() -> String { String(map { $0 == "_" ? " " : $0 }) }
}
