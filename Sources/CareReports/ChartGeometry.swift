/// The charts' geometry in SVG user units (every chart's viewBox is `0 0 width height`): a day's
/// x on every time axis is `plotLeft + (day − first + ½) × plotWidth ÷ days` (``DayScale``).
package enum ChartGeometry {
    /// The viewBox's width: narrow enough that the 12-unit text is about 10 px on a phone's 390 px.
    package static let width = 440.0
    /// The plot area's left edge (room for the value labels).
    package static let plotLeft = 38.0
    /// The plot area's width.
    package static let plotWidth = 394.0
}
