import MobilityModel

/// An alert transition as a FHIR R4 `Flag`: a warning about the patient for the period the alert
/// fires. `active` while firing, `inactive` once it ended; the period runs from the local day it
/// became active to the local day it ended (dates, as every view shows them); `code.text` is the
/// headline, the details an extension; how it ended (`resolved`, or `expired` when its rule stopped watching
/// while it held) is the `alert-outcome` extension, why it expired `alert-reason`; the evidence,
/// severity, labels and acknowledgement travel in extensions (Flag has no evidence element). The id is derived from the alert instance id, so a
/// re-publish (a reminder, the resolution, a retry) updates the same resource. Mapping: docs/fhir.md.
package enum FlagResource {
    /// The resource id of an alert instance's Flag (`mw-flag-` and the instance id).
    package static func id(of a: AlertTransition) -> String { "mw-flag-" + (FHIRSubject.isFHIRID(a.id) ? a.id : FHIRSubject.hash([a.id])) }

    /// The Flag's JSON, as text.
    package static func json(_ a: AlertTransition) -> String { String(decoding: jsonBytes(a), as: UTF8.self) }

    /// The Flag's JSON as the bytes that are published.
    package static func jsonBytes(_ a: AlertTransition) -> [UInt8] {
        var w = JSONWriter()
        write(a, into: &w)
        return w.bytes
    }

    /// Writes the Flag as a JSON object (an array element or the top-level value).
    package static func write(_ a: AlertTransition, into w: inout JSONWriter) {
        let ext = FHIRSystem.extensionPrefix
        w.beginObject()
        w.string("resourceType", "Flag")
        w.string("id", id(of: a))
        w.beginArray("extension")
        simple(&w, ext + "alert-severity") { $0.string("valueCode", a.severity.rawValue) }
        simple(&w, ext + "alert-fired-at") { $0.string("valueDateTime", a.firedDay.description) }
        simple(&w, ext + "alert-day") { $0.string("valueDate", a.day.description) }
        if a.isRepeat { simple(&w, ext + "alert-reminder") { $0.bool("valueBoolean", true) } }
        if a.status.isEnded { simple(&w, ext + "alert-outcome") { $0.string("valueCode", a.status.rawValue) } }
        if let r = a.reason { simple(&w, ext + "alert-reason") { $0.string("valueString", r) } }
        if !a.details.isEmpty { simple(&w, ext + "alert-details") { $0.string("valueString", a.details) } }
        for (k, v) in a.labels {
            complex(&w, ext + "alert-label") { w in
                simple(&w, "name") { $0.string("valueString", k) }
                simple(&w, "value") { $0.string("valueString", v) }
            }
        }
        for e in a.evidence {
            complex(&w, ext + "alert-evidence") { w in
                simple(&w, "name") { $0.string("valueString", e.name) }
                if let t = e.text {
                    simple(&w, "value") { $0.string("valueString", t) }
                } else if let v = e.value, v.isFinite {
                    if e.unit == "bool" {
                        simple(&w, "value") { $0.bool("valueBoolean", v != 0) }
                    } else {
                        simple(&w, "value") { FHIRQuantity.write("valueQuantity", value: v, unit: e.unit, into: &$0) }
                    }
                } else {
                    simple(&w, "dataAbsentReason") { $0.string("valueCode", "unknown") }
                }
            }
        }
        if let k = a.acknowledged {
            complex(&w, ext + "alert-acknowledged") { w in
                simple(&w, "by") { $0.string("valueString", k.by) }
                simple(&w, "at") { $0.string("valueDateTime", k.at.description) }
                if let n = k.note { simple(&w, "note") { $0.string("valueString", n) } }
            }
        }
        w.endArray()
        w.beginArray("identifier")
        w.beginObject()
        w.string("system", FHIRSystem.alertInstance)
        w.string("value", a.id)
        w.endObject()
        w.endArray()
        // A withdrawn alert was raised in error (late data or a late timeline entry showed it did not hold).
        w.string("status", a.status == .firing ? "active" : a.isWithdrawal ? "entered-in-error" : "inactive")
        w.beginArray("category")
        w.beginObject()
        w.beginArray("coding")
        FHIRCoding(system: FHIRSystem.flagCategory, code: "clinical", display: "Clinical").write(into: &w)
        w.endArray()
        w.endObject()
        w.endArray()
        w.beginObject("code")
        w.beginArray("coding")
        FHIRCoding(system: FHIRSystem.rule, code: a.rule, display: a.rule).write(into: &w)
        w.endArray()
        w.string("text", a.headline.isEmpty ? a.rule : a.headline)
        w.endObject()
        FHIRSubject.write(a.user, into: &w)
        w.beginObject("period")
        w.string("start", a.activeSinceDay.description)
        if let r = a.endedDay { w.string("end", r.description) }
        w.endObject()
        w.beginObject("author")
        w.string("display", "MobilityWatch rule \(a.rule)")
        w.endObject()
        w.endObject()
    }

    /// An extension with a value: `{"url": …, value…}`.
    static func simple(_ w: inout JSONWriter, _ url: String, _ value: (inout JSONWriter) -> Void) {
        w.beginObject()
        w.string("url", url)
        value(&w)
        w.endObject()
    }

    /// An extension of extensions: `{"url": …, "extension": […]}`.
    static func complex(_ w: inout JSONWriter, _ url: String, _ parts: (inout JSONWriter) -> Void) {
        w.beginObject()
        w.string("url", url)
        w.beginArray("extension")
        parts(&w)
        w.endArray()
        w.endObject()
    }
}

/// A FHIR `Quantity` with its UCUM code where the unit has one.
enum FHIRQuantity {
    static func write(_ key: String, value: Double, unit: String, into w: inout JSONWriter) {
        w.beginObject(key)
        w.number("value", (value * 1e6).rounded() / 1e6)
        if let code = UCUM.code(unit) {
            w.string("unit", unit.isEmpty ? "1" : unit)
            w.string("system", FHIRSystem.ucum)
            w.string("code", code)
        } else if !unit.isEmpty {
            w.string("unit", unit)
        }
        w.endObject()
    }
}
