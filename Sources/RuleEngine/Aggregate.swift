import RuleLanguage

/// Reductions of a day's values and of windows of days.
enum Aggregate {
    /// A percentile of unsorted values (sorted in place), q in 0–100.
    static func percentile(_ v: inout [Double], _ q: Double, _ method: PercentileMethod) -> Double? {
        guard !v.isEmpty else { return nil }
        v.sort()
        switch method {
        case .linear:
            let h = Double(v.count - 1) * q / 100
            let lo = Int(h.rounded(.down))
            let hi = min(lo + 1, v.count - 1)
            return v[lo] + (h - Double(lo)) * (v[hi] - v[lo])
        case .nearestRank:
            let rank = Int((q / 100 * Double(v.count)).rounded(.up))
            return v[max(rank, 1) - 1]
        }
    }

    static func mean(_ v: [Double]) -> Double? { v.isEmpty ? nil : v.reduce(0, +) / Double(v.count) }

    static func median(_ v: inout [Double]) -> Double? { percentile(&v, 50, .linear) }

    /// Least-squares slope of values against day numbers, per day.
    static func slope(_ xs: [Double], _ ys: [Double]) -> Double? {
        guard xs.count >= 2 else { return nil }
        let n = Double(xs.count)
        let mx = xs.reduce(0, +) / n, my = ys.reduce(0, +) / n
        var sxx = 0.0, sxy = 0.0
        for i in xs.indices {
            sxx += (xs[i] - mx) * (xs[i] - mx)
            sxy += (xs[i] - mx) * (ys[i] - my)
        }
        return sxx == 0 ? nil : sxy / sxx
    }
}
