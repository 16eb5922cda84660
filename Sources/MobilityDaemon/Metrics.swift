import MobilityModel

/// Renders the Prometheus text exposition format (version 0.0.4).
struct MetricsText {
    private(set) var text = ""

    mutating func family(_ name: String, _ type: String, _ help: String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }

    mutating func sample(_ name: String, _ value: Double) { sample(name, [:], value) }

    mutating func sample(_ name: String, _ labels: KeyValuePairs<String, String>, _ value: Double) {
        text += name
        if !labels.isEmpty {
            text += "{" + labels.map { "\($0.key)=\"\(MetricsText.escape($0.value))\"" }.joined(separator: ",") + "}"
        }
        text += " " + (value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)) + "\n"
    }

    static func escape(_ s: String) -> String {
        // Label values are rule names, reasons and the like: almost never anything to escape.
        if !s.utf8.contains(where: { $0 == 92 || $0 == 34 || $0 == 10 }) { return s }
        return s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
    }
}
