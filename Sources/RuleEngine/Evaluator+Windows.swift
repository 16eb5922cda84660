import MobilityModel
import RuleLanguage

extension Evaluator {
    /// The days a window covers at day `d`, or nil when its anchor event is absent.
    func windowRange(_ days: Int, _ anchor: CompiledRules.Anchor, _ d: DayNumber) -> ClosedRange<DayNumber>? {
        let n = DayNumber(days)
        switch anchor {
        case .current:
            return max(d - n + 1, user.segmentStart(d))...d
        case .before(let kind):
            guard let e = user.latestEvent(code.strings[Int(kind)], onOrBefore: d) else { return nil }
            let hi = e - 1
            let lo = max(e - n, user.segmentStart(hi))
            return lo <= hi ? lo...hi : nil
        case .after(let kind):
            guard let e = user.latestEvent(code.strings[Int(kind)], onOrBefore: d) else { return nil }
            var hi = min(e + n - 1, d)
            if let next = user.nextBoundary(after: e) { hi = min(hi, next - 1) }
            return e <= hi ? e...hi : nil
        }
    }

    mutating func window(_ f: WindowFunction, _ x: Int32, _ days: Int, _ minDays: Int, _ anchor: CompiledRules.Anchor, _ d: DayNumber) -> Double? {
        guard let range = windowRange(days, anchor, d) else { return f == .daysWithData ? 0 : nil }
        if f == .median {
            var ys: [Double] = []
            for k in range { if let v = number(x, k) { ys.append(v) } }
            guard ys.count >= minDays, !ys.isEmpty else { return nil }
            return Aggregate.median(&ys)
        }
        // One pass, no arrays. The slope is the least-squares fit against the day, computed about
        // the window's first day so that the sums stay small.
        var n = 0, sum = 0.0, lo = Double.infinity, hi = -Double.infinity, last = 0.0
        var sx = 0.0, sxx = 0.0, sxy = 0.0
        let x0 = range.lowerBound
        // The spread (residuals, standard deviation) is summed about the first value, so that
        // the squares of values far from zero lose no precision.
        var shift: Double?, su = 0.0, suu = 0.0, sxu = 0.0
        let spread = f == .stddev || f == .slopeLower || f == .slopeUpper || f == .slopeError
        for k in range {
            guard let v = number(x, k) else { continue }
            n += 1
            sum += v
            lo = Swift.min(lo, v)
            hi = Swift.max(hi, v)
            last = v
            let t = Double(k - x0)
            sx += t
            sxx += t * t
            sxy += t * v
            if spread {
                if shift == nil { shift = v }
                let u = v - shift!
                su += u
                suu += u * u
                sxu += t * u
            }
        }
        if f == .daysWithData { return Double(n) * 86_400 }
        if spread {
            guard n >= minDays, n >= f.minimumDays else { return nil }
            return Evaluator.spread(f, n: Double(n), sx: sx, sxx: sxx, su: su, suu: suu, sxu: sxu)
        }
        guard n >= minDays, n > 0 else { return nil }
        switch f {
        case .mean: return sum / Double(n)
        case .min: return lo
        case .max: return hi
        case .sum: return sum
        case .last: return last
        case .slope:
            guard n >= 2 else { return nil }
            let nn = Double(n)
            let dxx = sxx - sx * sx / nn, dxy = sxy - sx * sum / nn
            return dxx == 0 ? nil : dxy / dxx / 86_400
        case .median, .daysWithData, .slopeLower, .slopeUpper, .slopeError, .stddev: return nil
        }
    }

    /// `shortfall` / `shortfall_z` / `slope_change` / `slope_change_z` on day `d`: the line fitted
    /// to the `fit` days before the last `days` (within the segment), extrapolated to the recent
    /// days. The recent days' residuals are averaged with weights w (1, or for the slope change
    /// their day since the break, 1…K: the least-squares fit of a slope change there); the
    /// shortfall is the line at their weighted mean day minus their weighted mean, the slope change
    /// −shortfall · Σw / Σw², and either in standard errors divides by
    /// √(s² Σw²/(Σw)² + s²/n + (t̄ᵣ − t̄)² s²/Σ(t − t̄)²), s the fit's residual standard deviation
    /// (n − 2 df).
    mutating func shortfall(
        _ x: Int32, _ days: Int, _ fit: Int, _ minDays: Int, _ fitMin: Int, _ statistic: BreakStatistic, _ d: DayNumber
    )
        -> Double?
    {
        let segment = user.segmentStart(d)
        let recentLo = max(d - DayNumber(days) + 1, segment)
        let fitHi = recentLo - 1
        let fitLo = max(fitHi - DayNumber(fit) + 1, segment)
        guard fitLo <= fitHi else { return nil }
        let weighted = statistic.weighted
        var k = 0, sw = 0.0, sww = 0.0, rt = 0.0, ry = 0.0
        for day in recentLo...d {
            guard let v = number(x, day) else { continue }
            let w = weighted ? Double(day - fitHi) : 1
            k += 1
            sw += w
            sww += w * w
            rt += w * Double(day - fitLo)
            ry += w * v
        }
        guard k >= minDays, k > 0 else { return nil }
        var n = 0, sx = 0.0, sxx = 0.0, su = 0.0, suu = 0.0, sxu = 0.0
        var shift: Double?
        for day in fitLo...fitHi {
            guard let v = number(x, day) else { continue }
            if shift == nil { shift = v }
            let t = Double(day - fitLo), u = v - shift!
            n += 1
            sx += t
            sxx += t * t
            su += u
            suu += u * u
            sxu += t * u
        }
        guard n >= fitMin, n >= 3, let shift else { return nil }
        let nn = Double(n)
        let xx = sxx - sx * sx / nn, xu = sxu - sx * su / nn, uu = Swift.max(0, suu - su * su / nn)
        guard xx > 0 else { return nil }
        let b = xu / xx
        let gap = rt / sw - sx / nn
        let predicted = shift + su / nn + b * gap
        let fallen = predicted - ry / sw
        switch statistic {
        case .shortfall: return fallen
        case .slopeChange: return -fallen * sw / sww / 86_400
        case .shortfallZ, .slopeChangeZ: break
        }
        // On values that lie exactly on a line the residuals are rounding error: no scatter, unknown.
        let rss = uu - b * xu
        guard rss > 1e-9 * uu else { return nil }
        let s2 = rss / (nn - 2)
        let variance = s2 * sww / (sw * sw) + s2 / nn + gap * gap * s2 / xx
        guard variance > 0 else { return nil }
        let z = fallen / variance.squareRoot()
        return statistic == .slopeChangeZ ? -z : z
    }

    /// The standard deviation, or the slope's standard error or one-sided 95 % bound (per second,
    /// SI), from sums over n days of day offsets x and values u (shifted by a constant).
    static func spread(_ f: WindowFunction, n: Double, sx: Double, sxx: Double, su: Double, suu: Double, sxu: Double) -> Double? {
        let uu = Swift.max(0, suu - su * su / n)
        if f == .stddev { return (uu / (n - 1)).squareRoot() }
        let xx = sxx - sx * sx / n, xu = sxu - sx * su / n
        guard xx > 0 else { return nil }
        let b = xu / xx
        let residual = Swift.max(0, uu - b * xu)
        let se = (residual / (n - 2) / xx).squareRoot()
        let t = StudentT.oneSided95(degreesOfFreedom: Int(n) - 2)
        switch f {
        case .slopeError: return se / 86_400
        case .slopeLower: return (b - t * se) / 86_400
        default: return (b + t * se) / 86_400
        }
    }
}
