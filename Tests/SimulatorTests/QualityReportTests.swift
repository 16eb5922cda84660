import Foundation
import MobilityModel
import Simulator
import Testing

@Suite struct ConfidenceIntervalTests {
    /// Reference values: Wilson intervals (statsmodels proportion_confint method="wilson") and
    /// exact Poisson intervals (Garwood; scipy chi2.ppf(0.025, 2k) / 2 and chi2.ppf(0.975, 2k + 2) / 2).
    @Test(arguments: [(0, 10, 0.0, 0.2775), (5, 10, 0.2366, 0.7634), (10, 10, 0.7225, 1.0), (95, 100, 0.8882, 0.9785)])
    func wilson(k: Int, n: Int, lower: Double, upper: Double) {
        let (lo, hi) = ConfidenceInterval.wilson(k, n)
        #expect(abs(lo - lower) < 0.0005, "lower \(lo)")
        #expect(abs(hi - upper) < 0.0005, "upper \(hi)")
    }

    @Test(arguments: [(0, 0.0, 3.6889), (1, 0.0253, 5.5716), (10, 4.7954, 18.3904), (100, 81.3640, 121.6268)])
    func poisson(k: Int, lower: Double, upper: Double) {
        let (lo, hi) = ConfidenceInterval.poisson(k)
        #expect(abs(lo - lower) < 0.001, "lower \(lo)")
        #expect(abs(hi - upper) < 0.001, "upper \(hi)")
    }
}

@Suite struct QualityReportTests {
    func label(_ user: String, _ pattern: Population.Pattern, stall onset: Int?, injury: Int?) -> Population.Label {
        var l = Population.Label(user: user, pattern: pattern, expected: onset == nil ? [] : ["stalled_recovery"])
        l.onset = onset.map { ["stalled_recovery": $0] } ?? [:]
        l.injuryDay = injury
        l.days = 90
        return l
    }

    @Test func scoresDetectionsFalseAlertsRiskAndDelay() {
        let labels = [
            label("a", .stalled, stall: 50, injury: 31),  // recovery window days 52-90
            label("b", .slowSteady, stall: nil, injury: 31),
            label("c", .stalled, stall: 60, injury: 31),
            label("d", .normal, stall: nil, injury: nil)
        ]
        let f = [
            // a: detected on day 55 (5 days after onset); a repeat-free re-fire in the episode is no false alert
            QualityReport.Firing(rule: "stalled_recovery", user: "a", day: 55),
            QualityReport.Firing(rule: "stalled_recovery", user: "a", day: 70),
            // b: two false alerts
            QualityReport.Firing(rule: "stalled_recovery", user: "b", day: 60),
            QualityReport.Firing(rule: "stalled_recovery", user: "b", day: 80),
            // c: fired 4 days before its onset (false), then never again: missed
            QualityReport.Firing(rule: "stalled_recovery", user: "c", day: 56)
        ]
        let r = QualityReport.score(labels: labels, firings: f, rules: ["stalled_recovery"])
        let s = r.rules["stalled_recovery"]!
        #expect(s.positives == 2)
        #expect(s.detected == 1)
        #expect(s.delays == [5])
        #expect(s.falseAlerts == 3)
        #expect((s.truePositive, s.falsePositive, s.falseNegative, s.trueNegative) == (2, 1, 0, 1))
        // a: days 52-46 (none, onset - 3 = 47 is before the window); b: 52-90 (39); c: 52-56 (5); d: no injury
        #expect(s.riskDays == 39 + 5)
        #expect(s.missedFor == ["stalled": 1])
        #expect(s.falseFor == ["slow_steady": 1])
        #expect(r.table(rules: ["stalled_recovery"]).contains("| stalled_recovery | 2 | 3 | 0.667 ["))
    }

    @Test func labelsCarryOnsetDatesAndTraits() {
        let pop = Population(users: 300, days: 90, seed: 7, cohort: .wide)
        let labels = pop.labels()
        let stalls = labels.filter { $0.expected.contains("stalled_recovery") }
        #expect(!stalls.isEmpty)
        for l in stalls {
            let onset = try! #require(l.onset["stalled_recovery"])
            let injury = try! #require(l.injuryDay)
            #expect(onset > injury && onset <= injury + 35)
            #expect(l.json.contains("\"onset\":{\"stalled_recovery\":\"2026-"))
        }
        #expect(Set(labels.map(\.pattern)).isSuperset(of: [.slowSteady, .driftingPlateau, .relapse, .stalled, .normal]))
        let traits = Set(labels.flatMap(\.traits))
        #expect(traits == ["sparse", "noisy", "quiet", "heat_wave", "travel", "missing_days"])
        // The default cohort has none of the wide shapes.
        #expect(
            Population(users: 300, days: 90, seed: 7).labels().allSatisfy {
                ![.slowSteady, .driftingPlateau, .relapse].contains($0.pattern) && $0.traits.isEmpty
            })
    }

    @Test func wideShapesFollowTheirTimelines() {
        let pop = Population(users: 400, days: 90, seed: 11, cohort: .wide)
        var seen: Set<Population.Pattern> = []
        for i in 0..<pop.users {
            let (g, l) = pop.user(i)
            guard let inj = l.injuryDay, l.traits.allSatisfy({ $0 != "heat_wave" }) else { continue }
            let base = g.persona.walkingSpeed
            switch l.pattern {
            case .slowSteady:
                // at least 0.07 m/s gained in every two weeks of the recovery below baseline
                let a = g.meanSpeed(day: inj + 30), b = g.meanSpeed(day: inj + 44)
                if b < base { #expect(b - a >= 0.07 - 1e-9) }
                seen.insert(.slowSteady)
            case .driftingPlateau, .stalled, .relapse:
                let p = l.onset["stalled_recovery"]!
                #expect(g.meanSpeed(day: p) <= base - 0.15 + 1e-9)
                let later = g.meanSpeed(day: min(p + 14, inj + 60))
                #expect(later - g.meanSpeed(day: p) < 0.021 + 1e-9)
                #expect(g.meanSpeed(day: inj + 60) <= base - 0.12 + 1e-9)
                seen.insert(l.pattern)
            default: break
            }
        }
        #expect(seen == [.slowSteady, .driftingPlateau, .stalled, .relapse])
    }
}
