/// A unit of measure: a dimension and a factor that converts a value in this unit to SI.
///
/// The table accepts the spellings of the rule language (`m/s`, `mph`, `%`, `d`) and the
/// HealthKit unit strings found on the wire and in Apple Health exports (`mi/hr`, `km/hr`,
/// `mL/min·kg`, `ml/(kg*min)`, `%` as a fraction 0–1).
package struct MeasureUnit: Hashable, Sendable, CustomStringConvertible {
    /// The canonical spelling used when displaying the unit.
    package let symbol: String
    /// The dimension of values in this unit.
    package let dimension: PhysicalDimension
    /// Multiply a value in this unit by `toSI` to get the SI value.
    package let toSI: Double

    package init(symbol: String, dimension: PhysicalDimension, toSI: Double) {
        self.symbol = symbol
        self.dimension = dimension
        self.toSI = toSI
    }

    /// The canonical spelling.
    package var description: String { symbol }

    /// Converts a value in this unit to SI.
    @inlinable package func si(_ value: Double) -> Double { value * toSI }
    /// Converts an SI value to this unit.
    @inlinable package func fromSI(_ value: Double) -> Double { value / toSI }

    /// Seconds in a day.
    package static let secondsPerDay = 86_400.0

    /// Metres per second, the SI unit of speed.
    package static let metresPerSecond = MeasureUnit(symbol: "m/s", dimension: .speed, toSI: 1)
    /// The metre, the SI unit of length.
    package static let metre = MeasureUnit(symbol: "m", dimension: .length, toSI: 1)
    /// Percent: 1 % is 0.01 in SI (a fraction).
    package static let percent = MeasureUnit(symbol: "%", dimension: .dimensionless, toSI: 0.01)
    /// A pure number (a HealthKit fraction, a count).
    package static let one = MeasureUnit(symbol: "", dimension: .dimensionless, toSI: 1)
    /// The second, the SI unit of time.
    package static let second = MeasureUnit(symbol: "s", dimension: .time, toSI: 1)
    /// A day of 86 400 s (a duration, not a calendar day).
    package static let day = MeasureUnit(symbol: "d", dimension: .time, toSI: secondsPerDay)
    /// ml/(kg·min) expressed in SI (m³ kg⁻¹ s⁻¹).
    package static let vo2 = MeasureUnit(symbol: "ml/(kg*min)", dimension: .oxygenUptake, toSI: 1e-6 / 60)

    /// Units that rule authors can write after a number literal and in `{x in UNIT}`.
    package static let ruleUnits: [String: MeasureUnit] = {
        var t: [String: MeasureUnit] = [:]
        func add(_ names: [String], _ u: MeasureUnit) { for n in names { t[n] = u } }
        add(["m/s"], metresPerSecond)
        add(["mph", "mi/h", "mi/hr"], MeasureUnit(symbol: "mph", dimension: .speed, toSI: 0.44704))
        add(["km/h", "km/hr", "kph"], MeasureUnit(symbol: "km/h", dimension: .speed, toSI: 1 / 3.6))
        add(["cm/s"], MeasureUnit(symbol: "cm/s", dimension: .speed, toSI: 0.01))
        add(["m"], metre)
        add(["cm"], MeasureUnit(symbol: "cm", dimension: .length, toSI: 0.01))
        add(["mm"], MeasureUnit(symbol: "mm", dimension: .length, toSI: 0.001))
        add(["km"], MeasureUnit(symbol: "km", dimension: .length, toSI: 1000))
        add(["in"], MeasureUnit(symbol: "in", dimension: .length, toSI: 0.0254))
        add(["ft"], MeasureUnit(symbol: "ft", dimension: .length, toSI: 0.3048))
        add(["mi"], MeasureUnit(symbol: "mi", dimension: .length, toSI: 1609.344))
        add(["%"], percent)
        add(["s"], second)
        add(["min"], MeasureUnit(symbol: "min", dimension: .time, toSI: 60))
        add(["h"], MeasureUnit(symbol: "h", dimension: .time, toSI: 3600))
        add(["d"], day)
        add(["w", "wk"], MeasureUnit(symbol: "w", dimension: .time, toSI: 7 * secondsPerDay))
        add(["ml/kg/min", "ml/(kg*min)", "mL/min·kg", "mL/(kg·min)"], vo2)
        add(["m/s/d"], MeasureUnit(symbol: "m/s/d", dimension: .speed / .time, toSI: 1 / secondsPerDay))
        add(["m/s/w"], MeasureUnit(symbol: "m/s/w", dimension: .speed / .time, toSI: 1 / (7 * secondsPerDay)))
        add(["%/d"], MeasureUnit(symbol: "%/d", dimension: .dimensionless / .time, toSI: 0.01 / secondsPerDay))
        add(["%/w"], MeasureUnit(symbol: "%/w", dimension: .dimensionless / .time, toSI: 0.01 / (7 * secondsPerDay)))
        add(["m/d"], MeasureUnit(symbol: "m/d", dimension: .length / .time, toSI: 1 / secondsPerDay))
        add(["m/w"], MeasureUnit(symbol: "m/w", dimension: .length / .time, toSI: 1 / (7 * secondsPerDay)))
        return t
    }()

    /// HealthKit unit strings as samples carry them. `%` here is HealthKit's fraction (0–1).
    package static let healthKitUnits: [String: MeasureUnit] = {
        var t: [String: MeasureUnit] = [:]
        for (k, v) in ruleUnits where v.dimension != .dimensionless && v.dimension != .time { t[k] = v }
        t["%"] = one  // HealthKit stores percentages as fractions 0–1
        t["count"] = one
        t[""] = one
        t["m/s"] = metresPerSecond
        return t
    }()

    /// Looks up a HealthKit unit string.
    package static func healthKit(_ s: String) -> MeasureUnit? { healthKitUnits[s] }
    /// Looks up a rule-language unit spelling.
    package static func rule(_ s: String) -> MeasureUnit? { ruleUnits[s] }
}
