import EngineTestSupport
import MobilityModel
import RuleLanguage
import TestSupport
import Testing

@testable import RuleEngine

/// A raw value in 24 bytes: the end, the metric and the provenance share one word.
@Suite struct StoredValueTests {
    @Test func storedValuePacksEndMetricAndProvenanceIntoOneWord() {
        #expect(MemoryLayout<StoredValue>.stride == 24)
        // Every metric and provenance, with ends before 1970, at 0, now, and in year 9999.
        let ends: [Int64] = [-62_135_596_800_000, -1, 0, 1, 1_764_547_200_123, 253_402_300_799_999]
        for m in MetricKind.allCases {
            for p in [Provenance.device, .userEntered] {
                for e in ends {
                    let v = StoredValue(id: SampleID("x"), metric: m, value: -2.5, end: Timestamp(milliseconds: e), provenance: p)
                    #expect(v.metric == m && v.provenance == p && v.end.milliseconds == e && v.value == -2.5)
                    #expect(v.matches(m, nil) && v.matches(m, p) && !v.matches(m, p == .device ? .userEntered : .device))
                    #expect(!v.matches(m == .walkingSpeed ? .walkingStepLength : .walkingSpeed, nil))
                }
            }
        }
    }
}
