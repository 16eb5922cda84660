import Foundation
import MobilityModel
import MobilityWire
import Simulator
import Testing

/// The clinic cohort (`--cohort clinic`): its shapes, labels and noise model.
@Suite struct ClinicCohortTests {
    static let pop = Population(users: 400, days: 90, seed: 5, cohort: .clinic)

    @Test func labelsNameEveryShapeTraitAndOnset() {
        var patterns: Set<Population.Pattern> = [], traits: Set<String> = []
        for i in 0..<Self.pop.users {
            let (g, l) = Self.pop.user(i)
            patterns.insert(l.pattern)
            traits.formUnion(l.traits)
            let t = g.timeline
            // A double-support rise under 3 points is borderline: neither positive nor negative.
            if l.pattern == .regressing {
                let rise = try! #require(t.regressionRise)
                #expect((2...6).contains(rise * 100))
                #expect(l.unscored.contains("double_support_regression") == (rise < 0.03))
                #expect(l.expected.contains("double_support_regression") == (rise >= 0.03))
                if rise >= 0.03 {
                    // Onset: the day the rise reaches 3 points.
                    let onset = try! #require(l.onset["double_support_regression"])
                    #expect(g.meanDoubleSupport(day: onset) - g.meanDoubleSupport(day: t.doubleSupportRegressionDay! - 1) >= 0.03 - 1e-9)
                    #expect(g.meanDoubleSupport(day: onset - 1) - g.meanDoubleSupport(day: t.doubleSupportRegressionDay! - 1) < 0.03)
                }
            }
            // data_gap is expected exactly when three days in a row have no walking speed.
            let effects = try! #require(t.dayEffects)
            let empty = (1...90).map { d in effects.samples[d - 1] == 0 || t.missing.contains { $0.contains(d) } }
            let firstRun = (3...90).first { empty[$0 - 3] && empty[$0 - 2] && empty[$0 - 1] }.map { $0 - 2 }
            #expect(l.onset["data_gap"] == firstRun)
            #expect(l.expected.contains("data_gap") == (firstRun != nil))
            #expect(l.traits.contains("late_entry") == (t.injuryEnteredDay != nil))
            if let entered = t.injuryEnteredDay { #expect((1...14).contains(entered - t.injuryDay!)) }
            if let ill = t.illness {
                #expect((5...9).contains(ill.count))
                #expect(l.traits.contains(t.illnessAnnotated ? "illness" : "illness_unannotated"))
            }
            #expect(l.traits.contains("sync") == (g.syncDays != nil))
        }
        #expect(patterns == [.normal, .slowFull, .slowStart, .sCurve, .stalled, .driftingPlateau, .relapse, .regressing, .gap, .slowWalker, .uncalibrated])
        #expect(traits == ["sparse", "noisy", "few_samples", "late_entry", "sync", "illness", "illness_unannotated"])
    }

    @Test func recoveriesReachTheirShapes() {
        for i in 0..<Self.pop.users {
            let (g, l) = Self.pop.user(i)
            guard let inj = l.injuryDay else { continue }
            let base = g.persona.walkingSpeed
            switch l.pattern {
            case .slowFull:
                // Back at the baseline only 50-60 days after the injury.
                #expect(g.course(day: inj + 49) < base)
                #expect(g.course(day: inj + 60) >= base - 1e-9)
            case .slowStart:
                // Nothing gained in the first week.
                #expect(g.course(day: inj + 7) == g.course(day: inj))
            case .stalled, .driftingPlateau, .relapse:
                let p = try! #require(l.onset["stalled_recovery"])
                #expect(g.course(day: p) <= base - 0.15 + 1e-9)
                #expect(g.course(day: min(p + 14, inj + 60)) - g.course(day: p) < 0.021 + 1e-9)
            default: break
            }
        }
    }

    @Test func dayEffectsCarryOverAndSampleCountsVary() {
        var pairs = 0.0, squares = 0.0, fewDays = 0, days = 0
        for i in 0..<Self.pop.users {
            let (g, l) = Self.pop.user(i)
            let e = try! #require(g.timeline.dayEffects)
            #expect(e.speed.count == 90 && e.samples.count == 90)
            for d in 1..<90 {
                pairs += e.speed[d] * e.speed[d - 1]
                squares += e.speed[d - 1] * e.speed[d - 1]
            }
            for (k, n) in e.samples.enumerated() {
                let ill = g.timeline.illness?.contains(k + 1) == true
                #expect(n == 0 || (1...5).contains(n) || (10...30).contains(n) || ill, "day \(k + 1): \(n) samples")
                if n == 0 { #expect(l.traits.contains("sparse") || l.pattern == .gap) }
                if !ill, n > 0, !l.traits.contains("few_samples") {
                    days += 1
                    if n <= 5 { fewDays += 1 }
                }
            }
        }
        // AR(1): neighbouring days' effects correlate (φ 0.2-0.8 by user).
        #expect(pairs / squares > 0.2)
        // 3-8 % of days with 1-5 samples outside the few-sample users.
        #expect((0.03...0.08).contains(Double(fewDays) / Double(days)))
    }

    /// The daily p95's day-to-day scatter on days of 10 or more samples, as a minimal detectable
    /// change (1.96 · √2 · SD), for users without the noisy or few-sample traits over their first
    /// four weeks: the median near Apple's median MDC of 0.14 m/s (10th–90th percentile 0.08–0.23).
    @Test func dailyP95ScatterMatchesApplesDetectableChange() {
        let pop = Population(users: 60, days: 90, seed: 9, cohort: .clinic)  // injuries from day 31
        var mdc: [Double] = []
        for i in 0..<pop.users {
            let (g, l) = pop.user(i)
            guard l.traits.allSatisfy({ $0 != "noisy" && $0 != "few_samples" }) else { continue }
            var p95: [Double] = []
            for d in 1...28 {
                var values: [Double] = []
                for t in g.generate(day: d) where t.record.topic.hasSuffix("/samples") {
                    guard case .success(let v) = JSONValue.parse(t.record.payload), case .array(let items) = v else { continue }
                    for item in items {
                        guard case .string(let type)? = item["type"], type.hasSuffix("WalkingSpeed"), case .number(let x)? = item["value"],
                            case .string(let unit)? = item["unit"]
                        else { continue }
                        values.append(unit == "mi/hr" ? x * 0.44704 : x)
                    }
                }
                guard values.count >= 10 else { continue }
                values.sort()
                let h = 0.95 * Double(values.count - 1), lo = Int(h)
                p95.append(values[lo] + (h - Double(lo)) * (values[min(lo + 1, values.count - 1)] - values[lo]))
            }
            let mean = p95.reduce(0, +) / Double(p95.count)
            let sd = (p95.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(p95.count - 1)).squareRoot()
            mdc.append(1.96 * 2.0.squareRoot() * sd)
        }
        mdc.sort()
        #expect(mdc.count > 20)
        let median = mdc[mdc.count / 2]
        #expect((0.10...0.20).contains(median), "median MDC \(median)")
    }

    @Test func illnessIsAnnotatedOnlyWhenLabelledSo() {
        let pop = Population(users: 60, days: 90, seed: 5, cohort: .clinic)
        var annotated: Set<String> = []
        for r in pop.traffic() where r.topic.hasSuffix("/events") {
            guard case .success(let v) = JSONValue.parse(r.payload), v["kind"] == .string("illness") else { continue }
            annotated.insert(String(r.topic.split(separator: "/")[3]))
        }
        let labels = pop.labels()
        #expect(!annotated.isEmpty)
        #expect(annotated == Set(labels.filter { $0.traits.contains("illness") }.map(\.user)))
        #expect(labels.contains { $0.traits.contains("illness_unannotated") })
    }
}
