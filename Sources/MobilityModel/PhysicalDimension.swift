/// The physical dimension of a quantity, as integer exponents of length, mass and time.
///
/// Percentages, ratios and counts are dimensionless. Two quantities can be added or compared
/// only when their dimensions are equal; multiplication and division combine exponents.
package struct PhysicalDimension: Hashable, Sendable, CustomStringConvertible {
    /// Exponent of length (metre).
    package var length: Int8
    /// Exponent of mass (kilogram).
    package var mass: Int8
    /// Exponent of time (second).
    package var time: Int8

    /// Creates a dimension from its exponents.
    package init(length: Int8 = 0, mass: Int8 = 0, time: Int8 = 0) {
        self.length = length
        self.mass = mass
        self.time = time
    }

    /// A pure number: counts, fractions, percentages.
    package static let dimensionless = PhysicalDimension()
    /// Metres.
    package static let length = PhysicalDimension(length: 1)
    /// Seconds (and days, weeks).
    package static let time = PhysicalDimension(time: 1)
    /// Metres per second.
    package static let speed = PhysicalDimension(length: 1, time: -1)
    /// Volume per mass per time, the dimension of VO2Max (ml/(kg·min)).
    package static let oxygenUptake = PhysicalDimension(length: 3, mass: -1, time: -1)

    /// The dimension of a product.
    package static func * (a: PhysicalDimension, b: PhysicalDimension) -> PhysicalDimension {
        PhysicalDimension(length: a.length + b.length, mass: a.mass + b.mass, time: a.time + b.time)
    }

    /// The dimension of a quotient.
    package static func / (a: PhysicalDimension, b: PhysicalDimension) -> PhysicalDimension {
        PhysicalDimension(length: a.length - b.length, mass: a.mass - b.mass, time: a.time - b.time)
    }

    /// A human name for the dimension, used in diagnostics (`speed`, `length`, `m/s/d`…).
    package var description: String {
        switch self {
        case .dimensionless: return "number"
        case .length: return "length"
        case .time: return "duration"
        case .speed: return "speed"
        case .oxygenUptake: return "oxygen uptake"
        case .speed / .time: return "speed per day"
        case .length / .time: return "speed"
        case .dimensionless / .time: return "rate per day"
        default:
            var parts: [String] = []
            func part(_ sym: String, _ e: Int8) { if e != 0 { parts.append(e == 1 ? sym : "\(sym)^\(e)") } }
            part("m", length); part("kg", mass); part("s", time)
            return parts.joined(separator: "·")
        }
    }
}
