/// What `shortfall`-family functions report about the last days against the line fitted to the
/// days before them.
package enum BreakStatistic: Hashable, Sendable {
    /// `shortfall`: how far the recent days' mean fell below the extrapolated line (the series' unit).
    case shortfall
    /// `shortfall_z`: the shortfall in standard errors (dimensionless, positive when below).
    case shortfallZ
    /// `slope_change`: the least-squares change of slope since the break, the recent days'
    /// residuals weighted by their day since the break (the series' unit per day, negative when slower).
    case slopeChange
    /// `slope_change_z`: the slope change in standard errors (dimensionless, negative when slower).
    case slopeChangeZ

    /// The function's name in the rule language.
    package var name: String {
        switch self {
        case .shortfall: "shortfall"
        case .shortfallZ: "shortfall_z"
        case .slopeChange: "slope_change"
        case .slopeChangeZ: "slope_change_z"
        }
    }

    /// The statistic a function name calls, if it is one.
    package init?(name: String) {
        switch name {
        case "shortfall": self = .shortfall
        case "shortfall_z": self = .shortfallZ
        case "slope_change": self = .slopeChange
        case "slope_change_z": self = .slopeChangeZ
        default: return nil
        }
    }

    /// Whether the recent days' residuals are weighted by their day since the break.
    package var weighted: Bool { self == .slopeChange || self == .slopeChangeZ }
    /// Whether the statistic is in standard errors.
    package var standardised: Bool { self == .shortfallZ || self == .slopeChangeZ }
}
