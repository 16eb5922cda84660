import MobilityModel

/// The time axis of a chart: each day of `first…last` gets a slot of equal width, and a day's
/// x is the centre of its slot, `left + (day − first + ½) × width ÷ days`.
package struct DayScale: Hashable, Sendable {
    /// The first day drawn.
    package var first: DayNumber
    /// The last day drawn.
    package var last: DayNumber
    /// The plot area's left edge (SVG user units).
    package var left: Double
    /// The plot area's width.
    package var width: Double

    /// Creates a scale (`last >= first`).
    package init(first: DayNumber, last: DayNumber, left: Double, width: Double) {
        precondition(last >= first, "empty day range")
        self.first = first
        self.last = last
        self.left = left
        self.width = width
    }

    /// How many days the axis covers.
    package var days: Int { Int(last - first) + 1 }

    /// The width of one day's slot.
    package var step: Double { width / Double(days) }

    /// The centre of day `d`'s slot.
    package func x(_ d: DayNumber) -> Double { left + (Double(d - first) + 0.5) * step }

    /// The left edge of day `d`'s slot.
    package func slotStart(_ d: DayNumber) -> Double { left + Double(d - first) * step }

    /// True when `d` is on the axis.
    package func contains(_ d: DayNumber) -> Bool { d >= first && d <= last }

    /// `d` moved onto the axis.
    package func clamp(_ d: DayNumber) -> DayNumber { min(max(d, first), last) }
}
