/// The charts' geometry in SVG user units (every chart's viewBox is `0 0 width height`): a day's
/// x on every time axis is `plotLeft + (day − first + ½) × plotWidth ÷ days` (``DayScale``).
public enum ChartGeometry {
    /// The viewBox's width: narrow enough that the 12-unit text is about 10 px on a phone's 390 px.
    public static let width = 440.0
    /// The plot area's left edge (room for the value labels).
    public static let plotLeft = 38.0
    /// The plot area's width.
    public static let plotWidth = 394.0
}
