/// Quantiles of Student's t distribution, for the confidence bounds of window slopes.
enum StudentT {
    /// t(0.95, ν) for ν = 1…30 (standard tables).
    private static let table: [Double] = [
        6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782, 1.771, 1.761, 1.753,
        1.746, 1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697
    ]

    /// The one-sided 95 % quantile with ν degrees of freedom (ν ≥ 1): the table up to 30, then
    /// the Cornish–Fisher expansion about the normal quantile (error below 0.001).
    static func oneSided95(degreesOfFreedom v: Int) -> Double {
        precondition(v >= 1)
        if v <= table.count { return table[v - 1] }
        let z = 1.644_853_626_951_472, nu = Double(v)
        let z3 = z * z * z, z5 = z3 * z * z
        return z + (z3 + z) / (4 * nu) + (5 * z5 + 16 * z3 + 3 * z) / (96 * nu * nu)
    }
}
