import Foundation

/// 95 % confidence intervals for the quality report: Wilson's score interval for a proportion,
/// the exact (Garwood) interval for a Poisson count.
package enum ConfidenceInterval {
    /// The two-sided 97.5 % normal quantile.
    static let z = 1.959_963_984_540_054

    /// Wilson's score interval for `k` successes in `n` trials (Wilson 1927; well behaved at 0 and n).
    package static func wilson(_ k: Int, _ n: Int) -> (lower: Double, upper: Double) {
        precondition(n > 0 && k >= 0 && k <= n)
        let nn = Double(n), p = Double(k) / nn, z2 = z * z
        let centre = (p + z2 / (2 * nn)) / (1 + z2 / nn)
        let half = z / (1 + z2 / nn) * (p * (1 - p) / nn + z2 / (4 * nn * nn)).squareRoot()
        return (max(0, centre - half), min(1, centre + half))
    }

    /// The exact 95 % interval of a Poisson mean given `k` events (Garwood 1936): the means
    /// under which `k` or more (resp. `k` or fewer) events have probability 2.5 %.
    package static func poisson(_ k: Int) -> (lower: Double, upper: Double) {
        precondition(k >= 0)
        let lower = k == 0 ? 0 : solve(target: 0.025) { 1 - cdf(k - 1, $0) }
        let upper = solve(target: 0.975) { 1 - cdf(k, $0) }
        return (lower, upper)
    }

    /// P(X ≤ k) for X ~ Poisson(λ), summed in log space.
    static func cdf(_ k: Int, _ lambda: Double) -> Double {
        guard lambda > 0 else { return 1 }
        var sum = 0.0
        let l = log(lambda)
        for i in 0...k { sum += exp(-lambda + Double(i) * l - lgamma(Double(i + 1))) }
        return min(1, sum)
    }

    /// The λ at which an increasing function of λ reaches `target` (bisection).
    static func solve(target: Double, _ f: (Double) -> Double) -> Double {
        var lo = 0.0, hi = 10.0
        while f(hi) < target { hi *= 2 }
        for _ in 0..<80 {
            let mid = (lo + hi) / 2
            if f(mid) < target { lo = mid } else { hi = mid }
        }
        return (lo + hi) / 2
    }
}
