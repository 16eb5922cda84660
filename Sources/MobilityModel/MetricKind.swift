/// A HealthKit mobility quantity type that MobilityWatch understands.
package enum MetricKind: UInt8, CaseIterable, Hashable, Sendable, CustomStringConvertible {
    case walkingSpeed
    case walkingStepLength
    case walkingDoubleSupportPercentage
    case walkingAsymmetryPercentage
    case stairAscentSpeed
    case stairDescentSpeed
    case sixMinuteWalkTestDistance
    case vo2Max
    case appleWalkingSteadiness

    /// The short HealthKit name (`walkingSpeed`), also the rule-language identifier.
    package var name: String {
        switch self {
        case .walkingSpeed: "walkingSpeed"
        case .walkingStepLength: "walkingStepLength"
        case .walkingDoubleSupportPercentage: "walkingDoubleSupportPercentage"
        case .walkingAsymmetryPercentage: "walkingAsymmetryPercentage"
        case .stairAscentSpeed: "stairAscentSpeed"
        case .stairDescentSpeed: "stairDescentSpeed"
        case .sixMinuteWalkTestDistance: "sixMinuteWalkTestDistance"
        case .vo2Max: "vo2Max"
        case .appleWalkingSteadiness: "appleWalkingSteadiness"
        }
    }

    /// The long identifier (`HKQuantityTypeIdentifierWalkingSpeed`).
    package var healthKitIdentifier: String {
        switch self {
        case .vo2Max: "HKQuantityTypeIdentifierVO2Max"
        case .appleWalkingSteadiness: "HKQuantityTypeIdentifierAppleWalkingSteadiness"
        default:
            "HKQuantityTypeIdentifier" + name.prefix(1).uppercased() + name.dropFirst()
        }
    }

    /// The dimension of the metric's values.
    package var dimension: PhysicalDimension {
        switch self {
        case .walkingSpeed, .stairAscentSpeed, .stairDescentSpeed: .speed
        case .walkingStepLength, .sixMinuteWalkTestDistance: .length
        case .walkingDoubleSupportPercentage, .walkingAsymmetryPercentage, .appleWalkingSteadiness: .dimensionless
        case .vo2Max: .oxygenUptake
        }
    }

    /// The unit values are displayed in by default.
    package var displayUnit: MeasureUnit {
        switch dimension {
        case .speed: .metresPerSecond
        case .length: .metre
        case .oxygenUptake: .vo2
        default: .percent
        }
    }

    /// The physiologically plausible range of SI values; anything outside is rejected on ingest.
    package var plausibleRange: ClosedRange<Double> {
        switch self {
        case .walkingSpeed: 0...5  // m/s; elite race walking is below 4.5
        case .stairAscentSpeed, .stairDescentSpeed: 0...5
        case .walkingStepLength: 0...3  // m
        case .sixMinuteWalkTestDistance: 0...1500  // m; world-class 6-minute run < 2 km
        case .walkingDoubleSupportPercentage, .walkingAsymmetryPercentage, .appleWalkingSteadiness: 0...1
        case .vo2Max: MeasureUnit.vo2.si(5)...MeasureUnit.vo2.si(100)
        }
    }

    /// Every identifier a metric is known by (its short name, its HealthKit identifier, and
    /// `VO2Max`), to the metric.
    package static let identifiers: [String: MetricKind] = {
        var t: [String: MetricKind] = [:]
        for k in allCases { t[k.name] = k; t[k.healthKitIdentifier] = k }
        t["VO2Max"] = .vo2Max
        return t
    }()

    /// Looks up a metric by its short or long HealthKit identifier.
    package init?(identifier: String) {
        guard let k = Self.identifiers[identifier] else { return nil }
        self = k
    }

    /// The short HealthKit name (`walkingSpeed`).
    package var description: String { name }
}
