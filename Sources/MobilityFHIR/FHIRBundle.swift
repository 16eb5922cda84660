import MobilityModel

/// A FHIR `Bundle` of type `collection`: what `mobilityctl fhir export` writes.
public struct FHIRBundle: Sendable {
    private var entries: [String] = []

    /// Starts an empty collection.
    public init() {}

    /// Resources added so far.
    public var count: Int { entries.count }

    /// Adds an alert transition's Flag.
    public mutating func add(_ a: AlertTransition) { entries.append(FlagResource.json(a)) }

    /// Adds a series value's Observation.
    public mutating func add(_ p: SeriesPoint, meaning: SeriesMeaning?) {
        var w = JSONWriter()
        ObservationResource.write(p, meaning: meaning, into: &w)
        entries.append(w.text)
    }

    /// Adds a timeline entry's Observation.
    public mutating func add(_ e: TimelineEvent, user: String) {
        var w = JSONWriter()
        TimelineObservation.write(e, user: user, into: &w)
        entries.append(w.text)
    }

    /// The bundle's JSON (the resources' own JSON, each as an entry's `resource`).
    public var json: String {
        var s = "{\"resourceType\":\"Bundle\",\"type\":\"collection\",\"entry\":["
        for (i, r) in entries.enumerated() {
            if i > 0 { s += "," }
            s += "{\"resource\":" + r + "}"
        }
        return s + "]}"
    }
}
