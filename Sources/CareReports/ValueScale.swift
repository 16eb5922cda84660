/// The value axis of a plot, in the display unit: `lo…hi` spans `top…top + height` (higher values
/// up), with round ticks.
package struct ValueScale: Hashable, Sendable {
    /// The value at the bottom.
    package var lo: Double
    /// The value at the top.
    package var hi: Double
    /// The plot area's top edge.
    package var top: Double
    /// The plot area's height.
    package var height: Double
    /// The tick step.
    package var step: Double

    /// A scale over `minimum…maximum` widened to round ticks (about four intervals).
    package init(minimum: Double, maximum: Double, top: Double, height: Double) {
        var a = minimum, b = maximum
        if !(a.isFinite && b.isFinite) { a = 0; b = 1 }
        if b < a { swap(&a, &b) }
        if b - a < 1e-9 {
            let pad = max(abs(a) * 0.1, 1e-3)
            a -= pad
            b += pad
        }
        let raw = (b - a) / 4
        var magnitude = 1.0
        while magnitude * 10 <= raw { magnitude *= 10 }
        while magnitude > raw { magnitude /= 10 }
        let n = raw / magnitude
        let step = (n <= 1 ? 1 : n <= 2 ? 2 : n <= 5 ? 5 : 10) * magnitude
        self.step = step
        lo = (a / step).rounded(.down) * step
        hi = (b / step).rounded(.up) * step
        if hi - lo < step { hi = lo + step }
        self.top = top
        self.height = height
    }

    /// The y of value `v`.
    package func y(_ v: Double) -> Double { top + height * (hi - v) / (hi - lo) }

    /// The ticks from `lo` to `hi`.
    package var ticks: [Double] {
        let n = Int(((hi - lo) / step).rounded())
        return (0...max(0, min(n, 20))).map { lo + Double($0) * step }
    }

    /// Digits after the point that tell the ticks apart.
    package var decimals: Int {
        var d = 0
        var s = step
        while s < 0.999_999 && d < 6 {
            s *= 10
            d += 1
        }
        return d
    }
}
