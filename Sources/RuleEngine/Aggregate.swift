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

    static func median(_ v: inout [Double]) -> Double? { percentile(&v, 50, .linear) }
}
