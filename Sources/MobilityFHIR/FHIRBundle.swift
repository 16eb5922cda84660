import MobilityModel

/// A FHIR `Bundle` of type `collection`: what `mobilityctl fhir export` writes.
package struct FHIRBundle: Sendable {
    private var entries: [String] = []

    /// Starts an empty collection.
    package init() {}

    /// Resources added so far.
    package var count: Int { entries.count }

    /// Adds an alert transition's Flag.
    package mutating func add(_ a: AlertTransition) { entries.append(FlagResource.json(a)) }

    /// Adds a series value's Observation.
    package mutating func add(_ p: SeriesPoint, meaning: SeriesMeaning?) {
        var w = JSONWriter()
        ObservationResource.write(p, meaning: meaning, into: &w)
        entries.append(w.text)
    }

    /// Adds a timeline entry's Observation.
    package mutating func add(_ e: TimelineEvent, user: String) {
        var w = JSONWriter()
        TimelineObservation.write(e, user: user, into: &w)
        entries.append(w.text)
    }

    /// The bundle's JSON (the resources' own JSON, each as an entry's `resource`).
    package var json: String {
        var s = "{\"resourceType\":\"Bundle\",\"type\":\"collection\",\"entry\":["
        for (i, r) in entries.enumerated() {
            if i > 0 { s += "," }
            s += "{\"resource\":" + r + "}"
        }
        return s + "]}"
    }
}
