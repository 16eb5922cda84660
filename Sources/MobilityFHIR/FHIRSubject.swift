import MobilityModel

/// The `subject` of MobilityWatch's resources: the user, as a Patient reference by id where the
/// user id is a valid FHIR id, always with the user id as a logical identifier (ids may hold `_`,
/// which FHIR ids may not).
enum FHIRSubject {
    static func write(_ user: String, into w: inout JSONWriter) {
        w.beginObject("subject")
        if isFHIRID(user) { w.string("reference", "Patient/" + user) }
        w.string("type", "Patient")
        w.beginObject("identifier")
        w.string("system", FHIRSystem.user)
        w.string("value", user)
        w.endObject()
        w.endObject()
    }

    /// Whether `s` is a FHIR id: 1–64 of `A-Z a-z 0-9 - .`.
    static func isFHIRID(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 64
            && s.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5a) || ($0 >= 0x61 && $0 <= 0x7a) || $0 == 0x2d || $0 == 0x2e }
    }

    /// FNV-1a 64 of the parts joined by `|`, in hex: a deterministic resource id part.
    static func hash(_ parts: [String]) -> String {
        var h = FNV1a64()
        for (i, p) in parts.enumerated() {
            if i > 0 { h.combine(0x7c) }
            h.combine(p)
        }
        return h.paddedHex
    }
}
