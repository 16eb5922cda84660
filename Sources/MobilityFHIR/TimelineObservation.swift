import MobilityModel

/// A timeline entry (a clinical event such as an injury or a fall, or an annotation such as pain
/// or a heat wave) as a FHIR R4 `Observation`: the care team, or the patient's app, observed that
/// it happened on the local day (or over the days) it covers. Coded with SNOMED CT where a
/// built-in kind has a concept, and always with the kind; who of the staff entered it is the
/// `performer` (display only: the staff name is not a Practitioner resource) and when is
/// `issued`. A retracted entry is the same resource with status `entered-in-error`, so a
/// clinical system that took it sees it withdrawn. The id is derived from user and entry id, so
/// a correction updates the same resource. Mapping: docs/fhir.md.
package enum TimelineObservation {
    /// The resource id of a user's entry.
    package static func id(user: String, entry: String) -> String { "mw-event-" + FHIRSubject.hash([user, entry]) }

    /// The SNOMED CT concepts of the built-in kinds that have one (sources in docs/fhir.md).
    static let snomed: [String: (code: String, display: String)] = [
        "injury": ("417746004", "Traumatic injury"),
        "fall": ("1912002", "Fall"),
        "surgery": ("387713003", "Surgical procedure"),
        "hospital_admission": ("32485007", "Hospital admission"),
        "pain": ("22253000", "Pain"),
        "fatigue": ("84229001", "Fatigue")
    ]

    /// The Observation's JSON as the bytes that are published.
    package static func jsonBytes(_ e: TimelineEvent, user: String, retracted: Bool = false) -> [UInt8] {
        var w = JSONWriter()
        write(e, user: user, retracted: retracted, into: &w)
        return w.bytes
    }

    /// Writes the Observation as a JSON object.
    package static func write(_ e: TimelineEvent, user: String, retracted: Bool = false, into w: inout JSONWriter) {
        let clinical = e.category == .clinical
        w.beginObject()
        w.string("resourceType", "Observation")
        w.string("id", id(user: user, entry: e.id))
        w.beginArray("identifier")
        w.beginObject()
        w.string("system", FHIRSystem.timelineEntry)
        w.string("value", "\(user)/\(e.id)")
        w.endObject()
        w.endArray()
        w.string("status", retracted ? "entered-in-error" : "final")
        w.beginArray("category")
        w.beginObject()
        w.beginArray("coding")
        FHIRCoding(
            system: FHIRSystem.timelineCategory, code: e.category.description, display: clinical ? "Clinical event" : "Annotation"
        ).write(into: &w)
        w.endArray()
        w.endObject()
        w.endArray()
        w.beginObject("code")
        w.beginArray("coding")
        if let s = snomed[e.kind] { FHIRCoding(system: FHIRSystem.snomed, code: s.code, display: s.display).write(into: &w) }
        FHIRCoding(system: FHIRSystem.timelineKind, code: e.kind, display: e.kind.replacingOccurrences(of: "_", with: " ")).write(into: &w)
        w.endArray()
        w.string("text", e.kind.replacingOccurrences(of: "_", with: " ") + (clinical ? " (clinical event)" : " (annotation)"))
        w.endObject()
        FHIRSubject.write(user, into: &w)
        if e.firstDay == e.lastDay {
            w.string("effectiveDateTime", CivilDate(dayNumber: e.firstDay).description)
        } else {
            w.beginObject("effectivePeriod")
            w.string("start", CivilDate(dayNumber: e.firstDay).description)
            w.string("end", CivilDate(dayNumber: e.lastDay).description)
            w.endObject()
        }
        if let a = e.entered {
            w.string("issued", a.at.description)
            w.beginArray("performer")
            w.beginObject()
            w.string("display", a.team.isEmpty ? a.by : "\(a.by) (\(a.team))")
            w.endObject()
            w.endArray()
        }
        if let n = e.note {
            w.beginArray("note")
            w.beginObject()
            w.string("text", n)
            w.endObject()
            w.endArray()
        }
        w.endObject()
    }
}
