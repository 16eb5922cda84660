/// The FHIR output (`--fhir on|off`, default off): alert transitions as FHIR R4 Flags and series
/// values as Observations on `{root}/fhir/users/…` (``FHIROutputs``, docs/fhir.md).
extension DaemonConfiguration {
    static let fhirOptions: [Option] = [
        Option(name: "fhir", value: "on|off", help: "also publish alerts as FHIR R4 Flags and series as Observations on ROOT/fhir/users/… (default off)")
    ]

    mutating func applyFHIR(_ m: [String: String]) throws(Problem) {
        guard let v = m["fhir"] else { return }
        guard v == "on" || v == "off" else { throw Problem(description: "--fhir must be on or off, not '\(v)'") }
        fhir = v == "on"
    }
}
