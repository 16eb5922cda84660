import MobilityModel

/// A daily series value as a FHIR R4 `Observation` (category `activity`, as the HL7 PHR IG's
/// mobility profile): coded by LOINC where LOINC has the measurement, the HL7 PHR code and the
/// HealthKit identifier of the metric the series summarises, and the series' own name; effective
/// on the local day (a date), or over the days a windowed value covers; the value in UCUM. The id
/// is derived from user, series and day, so a revised day replaces its Observation (`amended`).
/// Mapping: docs/fhir.md.
package enum ObservationResource {
    /// The resource id of a user's series value of a day.
    package static func id(user: String, series: String, day: CivilDate) -> String {
        "mw-obs-" + FHIRSubject.hash([user, series, day.description])
    }

    /// The Observation's JSON as text; nil for a missing value that revises nothing (there is
    /// nothing to say).
    package static func json(_ p: SeriesPoint, meaning: SeriesMeaning?) -> String? {
        jsonBytes(p, meaning: meaning).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The Observation's JSON as the bytes that are published; nil for a missing value that
    /// revises nothing.
    package static func jsonBytes(_ p: SeriesPoint, meaning: SeriesMeaning?) -> [UInt8]? {
        guard p.value != nil || p.revised else { return nil }
        var w = JSONWriter()
        write(p, meaning: meaning, into: &w)
        return w.bytes
    }

    /// Writes the Observation as a JSON object. A missing value (a revised day whose data went
    /// away) is written with a `dataAbsentReason`.
    package static func write(_ p: SeriesPoint, meaning: SeriesMeaning?, into w: inout JSONWriter) {
        w.beginObject()
        w.string("resourceType", "Observation")
        w.string("id", id(user: p.user, series: p.name, day: p.day))
        w.beginArray("identifier")
        w.beginObject()
        w.string("system", FHIRSystem.seriesPoint)
        w.string("value", "\(p.user)/\(p.name)/\(p.day)")
        w.endObject()
        w.endArray()
        w.string("status", p.revised ? "amended" : "final")
        w.beginArray("category")
        w.beginObject()
        w.beginArray("coding")
        FHIRCoding(system: FHIRSystem.observationCategory, code: "activity", display: "Activity").write(into: &w)
        w.endArray()
        w.endObject()
        w.endArray()
        w.beginObject("code")
        w.beginArray("coding")
        for c in meaning?.metric?.fhirCodings ?? [] { c.write(into: &w) }
        FHIRCoding(system: FHIRSystem.series, code: p.name, display: p.name).write(into: &w)
        w.endArray()
        w.string("text", meaning.map { "\(p.name): \($0.method)" } ?? p.name)
        w.endObject()
        FHIRSubject.write(p.user, into: &w)
        let days = max(1, meaning?.days ?? 1)
        if days == 1 {
            w.string("effectiveDateTime", p.day.description)
        } else {
            w.beginObject("effectivePeriod")
            w.string("start", CivilDate(dayNumber: p.day.dayNumber - Int32(days - 1)).description)
            w.string("end", p.day.description)
            w.endObject()
        }
        if let v = p.value, v.isFinite {
            FHIRQuantity.write("valueQuantity", value: v, unit: p.unit, into: &w)
        } else {
            w.beginObject("dataAbsentReason")
            w.beginArray("coding")
            FHIRCoding(system: FHIRSystem.dataAbsentReason, code: "unknown", display: "Unknown").write(into: &w)
            w.endArray()
            w.endObject()
        }
        if let m = meaning {
            w.beginObject("method")
            w.string("text", m.method)
            w.endObject()
        }
        w.endObject()
    }
}
