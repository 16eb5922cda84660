import MobilityModel

/// Renders the Prometheus text exposition format (version 0.0.4).
struct MetricsText {
    private(set) var text = ""

    init() { text.reserveCapacity(32 << 10) }  // a scrape's page is ~20 KB: grown once, not doubled up to it

    // Appends only: no interpolation, `map` or `joined` per line (a scrape is ~200 lines, and
    // scripts/bench-e2e.sh scrapes every 10 ms while it measures).
    mutating func family(_ name: String, _ type: String, _ help: String) {
        text += "# HELP "
        text += name
        text += " "
        text += help
        text += "\n# TYPE "
        text += name
        text += " "
        text += type
        text += "\n"
    }

    mutating func sample(_ name: String, _ value: Double) { sample(name, [:], value) }

    mutating func sample(_ name: String, _ labels: KeyValuePairs<String, String>, _ value: Double) {
        text += name
        if !labels.isEmpty {
            text += "{"
            for (i, l) in labels.enumerated() {
                if i > 0 { text += "," }
                text += l.key
                text += "=\""
                text += MetricsText.escape(l.value)
                text += "\""
            }
            text += "}"
        }
        text += " "
        text += value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
        text += "\n"
    }

    static func escape(_ s: String) -> String {
        // Label values are rule names, reasons and the like: almost never anything to escape.
        if !s.utf8.contains(where: { $0 == 92 || $0 == 34 || $0 == 10 }) { return s }
        return s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
    }
}
