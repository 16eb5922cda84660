import TestSupport
import Testing

@testable import MobilityDaemon

/// The Prometheus text `MetricsText` renders: families, escaping and every kind of value, byte
/// for byte (the first page also parsed back by the suite's exposition parser).
@Suite struct MetricsTextTests {
    @Test func rendersFamiliesSamplesAndLabels() throws {
        var m = MetricsText()
        m.family("mw_up", "gauge", "Whether it is up.")
        m.sample("mw_up", 1)
        m.family("mw_rejected_total", "counter", "Rejected, by reason.")
        m.sample("mw_rejected_total", ["reason": "not_json"], 12)
        m.sample("mw_rejected_total", ["reason": "unit_mismatch", "shard": "0"], 0)
        #expect(
            m.text == """
                # HELP mw_up Whether it is up.
                # TYPE mw_up gauge
                mw_up 1
                # HELP mw_rejected_total Rejected, by reason.
                # TYPE mw_rejected_total counter
                mw_rejected_total{reason="not_json"} 12
                mw_rejected_total{reason="unit_mismatch",shard="0"} 0

                """)
        #expect(try parsePrometheus(m.text)["mw_up"] == 1)
    }

    @Test func writesIntegersDigitByDigitAndOtherValuesAsDoubles() throws {
        var m = MetricsText()
        let values: [Double] = [0, -0.0, 7, -42, 1_234_567_890_123, 999_999_999_999_999, 1e15, 0.25, -1.5, 1e-7, 1.7e308]
        for (i, v) in values.enumerated() { m.sample("v\(i)", v) }
        let lines = m.text.split(separator: "\n").map { String($0.split(separator: " ")[1]) }
        #expect(lines == ["0", "0", "7", "-42", "1234567890123", "999999999999999", "1000000000000000.0", "0.25", "-1.5", "1e-07", "1.7e+308"])
        // Each parses back to its value.
        for (text, v) in zip(lines, values) { #expect(Double(text) == v) }
    }

    @Test func spellsNonFiniteValuesAsTheFormatDoes() {
        var m = MetricsText()
        m.sample("a", .nan)
        m.sample("b", .infinity)
        m.sample("c", -.infinity)
        #expect(m.text == "a NaN\nb +Inf\nc -Inf\n")
    }

    @Test func escapesBackslashQuoteAndLineFeedInLabelValues() {
        var m = MetricsText()
        m.sample("mw_rules_info", ["identity": "a\\b \"c\"\nd é"], 1)
        #expect(m.text == "mw_rules_info{identity=\"a\\\\b \\\"c\\\"\\nd é\"} 1\n")
    }

    @Test func escapesBackslashAndLineFeedInHelpButNotQuotes() {
        var m = MetricsText()
        m.family("mw_x", "gauge", "a \\ b\nc \"d\"")
        #expect(m.text == "# HELP mw_x a \\\\ b\\nc \"d\"\n# TYPE mw_x gauge\n")
    }
}
