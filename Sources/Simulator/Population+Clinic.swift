import Foundation
import MobilityModel

extension Population {
    /// The clinic cohort's shapes and data (``Cohort/clinic``): the recovery course of the
    /// pattern, the user's day-by-day noise (``DayEffects``), and traits drawn independently of
    /// the pattern. Sets the label's traits, onsets and unscored rules; returns the phone's sync
    /// interval in days (nil: it publishes as it goes).
    ///
    /// Every level below is either from a source (docs/alert-quality.md, "The clinic cohort")
    /// or an assumption written down there.
    func clinic(_ p: inout Persona, _ t: inout Timeline, _ label: inout Label, injury: Int, rng: inout SplitMix64) -> Int? {
        p.walkingSpeed = 0.95 + rng.uniform() * 0.5
        p.doubleSupport = 0.24 + rng.uniform() * 0.08
        p.stepLength = 0.55 + rng.uniform() * 0.2
        // Six-minute-walk distance as walking speed over 280 s (266–406 m), under the watch's 500 m cap.
        p.sixMinuteWalk = p.walkingSpeed * 280
        // Sample noise relative to the walking speed: 6–11 % (0.075–0.14 m/s at 1.25 m/s; Apple
        // 2022: error SD 0.15 m/s against a walkway).
        let relativeNoise = 0.06 + rng.uniform() * 0.05
        p.doubleSupportNoise = 0.02 + rng.uniform() * 0.01
        var injured = true
        let base = p.walkingSpeed
        t.dropFactor = 0.55 + rng.uniform() * 0.15
        var deficit = base * (1 - t.dropFactor)
        switch label.pattern {
        case .normal:
            t.recoveryPerDay = 0.010 + rng.uniform() * 0.006
        case .slowFull:
            // Straight, reaching the baseline only on day 50–60, at no less than 0.006 m/s a day
            // (the rules' stall line is 0.005: 0.14 m/s, the phone's detectable change, in four
            // weeks): the drop is deepened where the baseline is too close for that.
            let days = 50 + Int(rng.next() % 11)
            deficit = max(deficit, 0.006 * Double(days))
            t.dropFactor = 1 - deficit / base
            t.recoveryPerDay = deficit / Double(days)
        case .slowStart:
            let lag = 7 + Int(rng.next() % 15)
            t.recovery = .slowStart(lag: lag)
            t.recoveryPerDay = deficit / Double(max(20, 40 + Int(rng.next() % 21) - lag))
        case .sCurve:
            t.recovery = .logistic(mid: 18 + rng.uniform() * 12, width: 4 + rng.uniform() * 4)
        case .stalled, .driftingPlateau, .relapse:
            // Straight (or, for a third of the stalls, S-shaped) until it stops 10–30 days after
            // the injury, at least 0.15 m/s below the baseline.
            t.recoveryPerDay = 0.008 + rng.uniform() * 0.008
            if label.pattern == .stalled, rng.uniform() < 1.0 / 3 { t.recovery = .logistic(mid: 14 + rng.uniform() * 10, width: 4 + rng.uniform() * 3) }
            var k = 10 + Int(rng.next() % 21)
            let g = TrafficGenerator(persona: p, timeline: t, seed: 0)
            while k > 5, g.regained(days: k) > base - 0.15 { k -= 1 }
            t.plateauDay = injury + k
            let level = g.regained(days: k)
            if label.pattern == .driftingPlateau {
                let span = Double(injury + 60 - t.plateauDay!)
                t.plateauDrift = min(0.0003 + rng.uniform() * 0.0012, max(0, (base - 0.12 - level) / span))
            } else if label.pattern == .relapse {
                t.relapsePerDay = 0.002 + rng.uniform() * 0.003
                t.relapseDays = 10 + Int(rng.next() % 11)
            }
        default:
            injured = false
        }
        switch label.pattern {
        case .regressing:
            // A sustained rise of 2–6 points, reached over 3–14 days.
            let rise = 0.02 + rng.uniform() * 0.04, ramp = 3 + Int(rng.next() % 12)
            t.doubleSupportRegressionDay = 25 + Int(rng.next() % 30)
            t.regressionRise = rise
            t.regressionPerDay = rise / Double(ramp)
            if rise < 0.03 {
                label.expected.remove("double_support_regression")
                label.unscored.insert("double_support_regression")
            }
        case .gap:
            let start = 20 + Int(rng.next() % 40)
            t.missing = [start...(start + 3 + Int(rng.next() % 4))]
        case .slowWalker:
            p.walkingSpeed = 0.55 + rng.uniform() * 0.1
        case .uncalibrated:
            t.uncalibratedUntil = 14 + Int(rng.next() % 14)
        default: break
        }
        p.speedNoise = relativeNoise * p.walkingSpeed
        // Double support follows the recovery: 10–15 points per unit of relative speed lost.
        t.doubleSupportPerDeficit = 0.10 + rng.uniform() * 0.05

        // Traits, independent of the pattern.
        let sparse = rng.uniform() < 0.15, noisy = rng.uniform() < 0.20, fewSamples = rng.uniform() < 0.20
        let synced = rng.uniform() < 0.20, late = rng.uniform() < 0.20, ill = rng.uniform() < 0.30
        if injured {
            t.injuryDay = injury
            if late {
                t.injuryEnteredDay = injury + 1 + Int(rng.next() % 14)
                label.traits.append("late_entry")
            }
            if ill {
                // A 5–9-day illness in recovery days 10–45: 80–90 % speed, a third to two thirds
                // of the samples, double support up 1–2 points; annotated half the time.
                let start = injury + 10 + Int(rng.next() % 36)
                t.illness = start...(start + 4 + Int(rng.next() % 5))
                t.illnessFactor = 0.8 + rng.uniform() * 0.1
                t.illnessSampleFactor = 0.33 + rng.uniform() * 0.34
                t.illnessDoubleSupport = 0.01 + rng.uniform() * 0.01
                t.illnessAnnotated = rng.uniform() < 0.5
                label.traits.append(t.illnessAnnotated ? "illness" : "illness_unannotated")
            }
        }
        if noisy { label.traits.append("noisy") }
        if fewSamples { label.traits.append("few_samples") }
        if sparse { label.traits.append("sparse") }
        let sync = synced ? 2 + Int(rng.next() % 3) : nil
        if synced { label.traits.append("sync") }

        t.dayEffects = Population.dayEffects(t, noisy: noisy, sixMinuteWalkNoise: p.sixMinuteWalkNoise, fewSamples: fewSamples, sparse: sparse, rng: &rng)
        // A weekly estimate that reaches the watch's 500 m cap is provisional: uncalibrated_6mwd
        // should flag it, whatever the pattern.
        let g = TrafficGenerator(persona: p, timeline: t, seed: 0)
        if let wd = t.sixMinuteWalkWeekday, let capped = (1...max(1, t.days)).first(where: { $0 % 7 == wd && g.sixMinuteWalkEstimate(day: $0) >= 500 }) {
            if !label.expected.contains("uncalibrated_6mwd") { label.cappedDay = capped }
            label.expected.insert("uncalibrated_6mwd")
        }
        label.onset = Population.clinicOnsets(label, t)
        if label.onset["data_gap"] != nil { label.expected.insert("data_gap") }
        return sync
    }

    /// A user's day effects: walking speed's AR(1) day effect (SD 0.02–0.045 m/s, φ 0.2–0.6;
    /// noisy: 0.06–0.10 m/s, φ 0.5–0.8) plus a weekend offset (±0.05 m/s; noisy ±0.10), double
    /// support's and step length's own AR(1) effects, and the samples of each day: 10–30, on
    /// 3–8 % of days (few-sample users 25–45 %) 1–5; a third to two thirds while ill; none on
    /// the days a sparse user's phone stays at home (30–50 % of days, and half of them a
    /// week-long gap).
    static func dayEffects(_ t: Timeline, noisy: Bool, sixMinuteWalkNoise: Double, fewSamples: Bool, sparse: Bool, rng: inout SplitMix64) -> DayEffects {
        let days = max(1, t.days)
        let sd = noisy ? 0.06 + rng.uniform() * 0.04 : 0.02 + rng.uniform() * 0.025
        let phi = noisy ? 0.5 + rng.uniform() * 0.3 : 0.2 + rng.uniform() * 0.4
        let weekend = (rng.uniform() * 2 - 1) * (noisy ? 0.10 : 0.05)
        let dsSD = 0.004 + rng.uniform() * 0.004, stepSD = 0.01 + rng.uniform() * 0.01
        let fewShare = fewSamples ? 0.25 + rng.uniform() * 0.2 : 0.03 + rng.uniform() * 0.05
        let atHome = sparse ? 0.3 + rng.uniform() * 0.2 : 0
        var gap: ClosedRange<Int>?
        if sparse, rng.uniform() < 0.5 {
            let start = 15 + Int(rng.next() % UInt64(max(1, days - 30)))
            gap = start...(start + 6)
        }
        func ar(_ sd: Double, _ rng: inout SplitMix64) -> [Double] {
            var out: [Double] = [], e = rng.normal() * sd
            let innovation = sd * (1 - phi * phi).squareRoot()
            for _ in 0..<days {
                out.append(e)
                e = phi * e + innovation * rng.normal()
            }
            return out
        }
        var speed = ar(sd, &rng)
        let ds = ar(dsSD, &rng), step = ar(stepSD, &rng)
        var samples: [Int] = []
        for d in 1...days {
            let weekday = (Int(t.start.dayNumber) + d - 1 + 4) % 7  // 0 Sunday … 6 Saturday (1970-01-01 was a Thursday)
            if weekday == 0 || weekday == 6 { speed[d - 1] += weekend }
            var n = rng.uniform() < fewShare ? 1 + Int(rng.next() % 5) : 10 + Int(rng.next() % 21)
            if let ill = t.illness, ill.contains(d) { n = max(1, Int((Double(n) * t.illnessSampleFactor).rounded())) }
            // The phone at home: never on the first day or the last three (the first day anchors
            // the user's data; a gap at the very end would never be seen to close).
            let home = rng.uniform() < atHome || gap?.contains(d) == true
            if home, d > 1, d <= days - 3 { n = 0 }
            samples.append(n)
        }
        let walk = (0..<days).map { _ in rng.normal() * sixMinuteWalkNoise }
        return DayEffects(speed: speed, doubleSupport: ds, stepLength: step, samples: samples, sixMinuteWalk: walk)
    }

    /// The clinic cohort's onsets: the day recovery stopped (stall shapes), the day a
    /// double-support rise reached 3 points, the first day of the first run of three days without
    /// walking speed (the phone at home, or a gap), the first watch estimate while uncalibrated
    /// (or, for a calibrated watch, the first at the 500 m cap), day 1 for a slow walker.
    static func clinicOnsets(_ label: Label, _ t: Timeline) -> [String: Int] {
        var o: [String: Int] = [:]
        if label.expected.contains("stalled_recovery") { o["stalled_recovery"] = t.plateauDay }
        if label.expected.contains("double_support_regression"), let r = t.doubleSupportRegressionDay {
            o["double_support_regression"] = r + Int((0.03 / t.regressionPerDay).rounded(.up)) - 1
        }
        if label.expected.contains("low_gait_speed") { o["low_gait_speed"] = 1 }
        if label.expected.contains("uncalibrated_6mwd"), let wd = t.sixMinuteWalkWeekday {
            o["uncalibrated_6mwd"] = label.cappedDay ?? (1...7).first { $0 % 7 == wd }
        }
        var run = 0
        for d in 1...max(1, t.days) {
            let empty = t.missing.contains { $0.contains(d) } || t.dayEffects.map { d <= $0.samples.count && $0.samples[d - 1] == 0 } == true
            run = empty ? run + 1 : 0
            if run == 3 {
                o["data_gap"] = d - 2
                break
            }
        }
        return o
    }
}
