import MobilityModel

/// Renders the Prometheus text exposition format (version 0.0.4) into UTF-8 bytes.
///
/// Appended as bytes, not as a `String`: a scrape is ~180 lines, and `String +=` of each name,
/// label and number cost ~2.8 k instructions a line (510 k a scrape; `scripts/bench-e2e.sh`
/// scrapes every 10 ms while it measures). Names and label values are native strings, copied by their
/// UTF-8 storage; integers are written digit by digit.
struct MetricsText {
    private(set) var bytes: [UInt8] = []

    init() { bytes.reserveCapacity(32 << 10) }  // a scrape's page is ~11 – 20 KB: grown once, not doubled up to it

    /// The page as text (tests).
    var text: String { String(decoding: bytes, as: UTF8.self) }

    mutating func family(_ name: String, _ type: String, _ help: String) {
        append("# HELP ")
        append(name)
        bytes.append(UInt8(ascii: " "))
        appendEscaped(help, quotes: false)
        append("\n# TYPE ")
        append(name)
        bytes.append(UInt8(ascii: " "))
        append(type)
        bytes.append(UInt8(ascii: "\n"))
    }

    mutating func sample(_ name: String, _ value: Double) { sample(name, [:], value) }

    mutating func sample(_ name: String, _ labels: KeyValuePairs<String, String>, _ value: Double) {
        append(name)
        if !labels.isEmpty {
            bytes.append(UInt8(ascii: "{"))
            var first = true
            for l in labels {
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                append(l.key)
                append("=\"")
                appendEscaped(l.value)
                bytes.append(UInt8(ascii: "\""))
            }
            bytes.append(UInt8(ascii: "}"))
        }
        bytes.append(UInt8(ascii: " "))
        appendValue(value)
        bytes.append(UInt8(ascii: "\n"))
    }

    private mutating func append(_ s: String) {
        // By the string's contiguous UTF-8 (a memcpy), not through the generic `UTF8View` append.
        var s = s
        s.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// A label value with `\`, `"` and line feeds escaped, or (`quotes: false`) a HELP text with
    /// `\` and line feeds escaped, as the format requires.
    private mutating func appendEscaped(_ s: String, quotes: Bool = true) {
        var s = s
        s.withUTF8 { u in
            // Label values and help texts: almost never anything to escape.
            guard u.contains(where: { $0 == 92 || ($0 == 34 && quotes) || $0 == 10 }) else { return bytes.append(contentsOf: u) }
            for b in u {
                switch b {
                case 92: bytes.append(contentsOf: [92, 92])  // \\
                case 34 where quotes: bytes.append(contentsOf: [92, 34])  // \"
                case 10: bytes.append(contentsOf: [92, 110])  // \n
                default: bytes.append(b)
                }
            }
        }
    }

    /// A sample value: the format's `NaN`, `+Inf` and `-Inf`; otherwise as JSON writes a number (an
    /// integral value below 1e15 as an integer, digit by digit; else Swift's shortest round-tripping
    /// text of the double).
    private mutating func appendValue(_ v: Double) {
        if v.isNaN { return append("NaN") }
        if v.isInfinite { return append(v > 0 ? "+Inf" : "-Inf") }
        JSONWriter.appendNumber(v, to: &bytes)
    }
}
