import MobilityModel

/// A FHIR `Coding`: a code in a code system, with an optional display text.
package struct FHIRCoding: Hashable, Sendable {
    /// The code system's URI.
    package var system: String
    /// The code.
    package var code: String
    /// A human-readable text of the code, if the system defines one.
    package var display: String?

    package init(system: String, code: String, display: String? = nil) {
        self.system = system
        self.code = code
        self.display = display
    }

    /// Writes the coding as a JSON object (an array element).
    func write(into w: inout JSONWriter) {
        w.beginObject()
        w.string("system", system)
        w.string("code", code)
        if let display { w.string("display", display) }
        w.endObject()
    }
}

/// The code systems and identifier systems MobilityWatch's FHIR resources use (docs/fhir.md).
package enum FHIRSystem {
    /// LOINC.
    package static let loinc = "http://loinc.org"
    /// UCUM, the units of `valueQuantity`.
    package static let ucum = "http://unitsofmeasure.org"
    /// HealthKit type identifiers (`HKQuantityTypeIdentifierWalkingSpeed`), the system URI that
    /// Stanford's HealthKitOnFHIR uses for them.
    package static let healthKit = "http://developer.apple.com/documentation/healthkit"
    /// HL7 Personal Health Record IG: patient-generated codes equal to HealthKit's short names.
    package static let phr = "http://hl7.org/fhir/uv/phr/CodeSystem/observation-pghd-codes"
    /// FHIR R4 Flag categories.
    package static let flagCategory = "http://terminology.hl7.org/CodeSystem/flag-category"
    /// FHIR R4 Observation categories.
    package static let observationCategory = "http://terminology.hl7.org/CodeSystem/observation-category"
    /// FHIR R4 data-absent reasons.
    package static let dataAbsentReason = "http://terminology.hl7.org/CodeSystem/data-absent-reason"
    /// MobilityWatch's rule names (a Flag's code).
    package static let rule = "urn:mobilitywatch:rule"
    /// MobilityWatch's series names (an Observation's most specific code).
    package static let series = "urn:mobilitywatch:series"
    /// MobilityWatch user ids (a subject's identifier).
    package static let user = "urn:mobilitywatch:user"
    /// Alert instance ids (a Flag's identifier).
    package static let alertInstance = "urn:mobilitywatch:alert-instance"
    /// Series points, `user/series/day` (an Observation's identifier).
    package static let seriesPoint = "urn:mobilitywatch:series-point"
    /// SNOMED CT (the codes of the built-in timeline kinds that have one).
    package static let snomed = "http://snomed.info/sct"
    /// MobilityWatch's timeline kinds (`injury`, `heat_wave`, a kind the rules declare): an entry's code.
    package static let timelineKind = "urn:mobilitywatch:timeline-kind"
    /// Clinical event or annotation (an entry's Observation category).
    package static let timelineCategory = "urn:mobilitywatch:timeline-category"
    /// Timeline entries, `user/id` (an entry's Observation identifier).
    package static let timelineEntry = "urn:mobilitywatch:timeline-entry"
    /// The prefix of MobilityWatch's extension URLs.
    package static let extensionPrefix = "urn:mobilitywatch:fhir:"
}

extension MetricKind {
    /// The codings of the metric: LOINC where LOINC has a code for the measurement, then the HL7
    /// PHR code and the HealthKit identifier (sources in docs/fhir.md).
    package var fhirCodings: [FHIRCoding] {
        var c: [FHIRCoding] = []
        if let loinc = loincCode { c.append(FHIRCoding(system: FHIRSystem.loinc, code: loinc.code, display: loinc.display)) }
        c.append(FHIRCoding(system: FHIRSystem.phr, code: name))
        c.append(FHIRCoding(system: FHIRSystem.healthKit, code: healthKitIdentifier))
        return c
    }

    /// The LOINC code of the measurement, where one exists: only the six-minute walk distance
    /// (64098-7). No LOINC term describes passive, free-living gait speed, step length, double
    /// support, asymmetry, stair speed, steadiness or a predicted VO2max (docs/fhir.md).
    package var loincCode: (code: String, display: String)? {
        switch self {
        case .sixMinuteWalkTestDistance: ("64098-7", "Six minute walk test")
        default: nil
        }
    }
}

/// UCUM codes of the display units series are published in.
package enum UCUM {
    /// The UCUM code of a MobilityWatch unit symbol (`mph` → `[mi_i]/h`); nil when it has none.
    package static func code(_ symbol: String) -> String? { table[symbol] }

    static let table: [String: String] = [
        "m/s": "m/s", "mph": "[mi_i]/h", "km/h": "km/h", "cm/s": "cm/s",
        "m": "m", "cm": "cm", "mm": "mm", "km": "km", "in": "[in_i]", "ft": "[ft_i]", "mi": "[mi_i]",
        "%": "%", "": "1",
        "s": "s", "min": "min", "h": "h", "d": "d", "w": "wk",
        "ml/(kg*min)": "mL/(kg.min)",
        "m/s/d": "m/s/d", "m/s/w": "m/s/wk", "%/d": "%/d", "%/w": "%/wk", "m/d": "m/d", "m/w": "m/wk"
    ]
}
