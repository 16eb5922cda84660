import EngineTestSupport
import MobilityModel
import RuleLanguage
import TestSupport
import Testing

@testable import RuleEngine

/// Every window function against a naive reference on seeded random data with gaps and an injury boundary.
@Suite struct WindowTests {
    static let rules = """
        series d = mean(walkingSpeed)
        series w_mean = mean(d, 7 d, min: 3)
        series w_median = median(d, 9 d)
        series w_min = min(d, 5 d)
        series w_max = max(d, 5 d)
        series w_sum = sum(d, 4 d, min: 2)
        series w_last = last(d, 6 d)
        series w_slope = slope(d, 14 d, min: 5)
        series w_slope_error = slope_error(d, 14 d, min: 5)
        series w_slope_lower = slope_lower(d, 14 d, min: 5)
        series w_slope_upper = slope_upper(d, 14 d)
        series w_stddev = stddev(d, 8 d)
        series w_days = days_with_data(d, 10 d)
        series w_base = mean(d, 30 d, before: injury, min: 10)
        series w_after = max(d, 20 d, after: injury)
        series w_missing = missing_days(d)
        series w_change = change(d, 3 d)
        series w_short = shortfall(d, 5 d, fit: 12 d, min: 2, fit_min: 4)
        series w_short_z = shortfall_z(d, 5 d, fit: 12 d, min: 2, fit_min: 4)
        series w_bend = slope_change(d, 5 d, fit: 12 d, min: 2, fit_min: 4)
        series w_bend_z = slope_change_z(d, 5 d, fit: 12 d, min: 2, fit_min: 4)
        """

    /// The naive reference: days present in [lo, hi] within the segment.
    static func reference(_ values: [Int: Double], injury: Int?, firstDay: Int) -> [String: (Int) -> Double?] {
        func seg(_ d: Int) -> Int { if let i = injury, d >= i { return i }; return Int.min / 2 }
        func window(_ d: Int, _ n: Int) -> [(Int, Double)] {
            stride(from: max(d - n + 1, seg(d)), through: d, by: 1).compactMap { k in values[k].map { (k, $0) } }
        }
        func med(_ v: [Double]) -> Double {
            let s = v.sorted()
            let h = Double(s.count - 1) * 0.5
            let lo = Int(h)
            return s[lo] + (h - Double(lo)) * (s[min(lo + 1, s.count - 1)] - s[lo])
        }
        return [
            "w_mean": { d in
                let w = window(d, 7); return w.count >= 3 ? w.map(\.1).reduce(0, +) / Double(w.count) : nil
            },
            "w_median": { d in
                let w = window(d, 9); return w.isEmpty ? nil : med(w.map(\.1))
            },
            "w_min": { d in window(d, 5).map(\.1).min() },
            "w_max": { d in window(d, 5).map(\.1).max() },
            "w_sum": { d in
                let w = window(d, 4); return w.count >= 2 ? w.map(\.1).reduce(0, +) : nil
            },
            "w_last": { d in window(d, 6).last?.1 },
            "w_slope": { d in
                let w = window(d, 14)
                guard w.count >= 5 else { return nil }
                let n = Double(w.count)
                let sx = w.map { Double($0.0) }.reduce(0, +), sy = w.map(\.1).reduce(0, +)
                let sxy = w.map { Double($0.0) * $0.1 }.reduce(0, +), sxx = w.map { Double($0.0) * Double($0.0) }.reduce(0, +)
                return (n * sxy - sx * sy) / (n * sxx - sx * sx) / 86_400
            },
            "w_slope_error": { d in slopeFit(window(d, 14), min: 5).map { $0.error } },
            "w_slope_lower": { d in slopeFit(window(d, 14), min: 5).map { $0.slope - $0.t * $0.error } },
            "w_slope_upper": { d in slopeFit(window(d, 14), min: 3).map { $0.slope + $0.t * $0.error } },
            "w_stddev": { d in
                let w = window(d, 8).map(\.1)
                guard w.count >= 2 else { return nil }
                let m = w.reduce(0, +) / Double(w.count)
                return (w.map { ($0 - m) * ($0 - m) }.reduce(0, +) / Double(w.count - 1)).squareRoot()
            },
            "w_days": { d in Double(window(d, 10).count) * 86_400 },
            "w_base": { d in
                guard let i = injury, d >= i else { return nil }
                let w = stride(from: i - 30, through: i - 1, by: 1).compactMap { values[$0] }
                return w.count >= 10 ? w.reduce(0, +) / Double(w.count) : nil
            },
            "w_after": { d in
                guard let i = injury, d >= i else { return nil }
                return stride(from: i, through: min(i + 19, d), by: 1).compactMap { values[$0] }.max()
            },
            "w_missing": { d in
                var n = 0, k = d
                while k >= firstDay, values[k] == nil { n += 1; k -= 1 }
                return Double(n) * 86_400
            },
            "w_change": { d in
                guard d - 3 >= seg(d), let a = values[d], let b = values[d - 3] else { return nil }
                return a - b
            },
            "w_short": { d in shortfall(values, d, seg(d), z: false) },
            "w_short_z": { d in shortfall(values, d, seg(d), z: true) },
            "w_bend": { d in slopeChange(values, d, seg(d), z: false) },
            "w_bend_z": { d in slopeChange(values, d, seg(d), z: true) }
        ]
    }

    /// `shortfall(d, 5 d, fit: 12 d, min: 2, fit_min: 4)` (and `_z`), two-pass: the line fitted to
    /// the 12 days before the last 5 (within the segment), at the recent days' mean day, minus their mean.
    static func shortfall(_ values: [Int: Double], _ d: Int, _ segment: Int, z: Bool) -> Double? {
        let recentLo = max(d - 4, segment), fitHi = recentLo - 1, fitLo = max(fitHi - 11, segment)
        guard fitLo <= fitHi else { return nil }
        let recent = (recentLo...d).compactMap { k in values[k].map { (Double(k), $0) } }
        let fit = (fitLo...fitHi).compactMap { k in values[k].map { (Double(k), $0) } }
        guard recent.count >= 2, fit.count >= 4 else { return nil }
        let n = Double(fit.count), k = Double(recent.count)
        let mx = fit.map(\.0).reduce(0, +) / n, my = fit.map(\.1).reduce(0, +) / n
        let sxx = fit.map { ($0.0 - mx) * ($0.0 - mx) }.reduce(0, +)
        guard sxx > 0 else { return nil }
        let b = fit.map { ($0.0 - mx) * ($0.1 - my) }.reduce(0, +) / sxx
        let rt = recent.map(\.0).reduce(0, +) / k, ry = recent.map(\.1).reduce(0, +) / k
        let fallen = my + b * (rt - mx) - ry
        guard z else { return fallen }
        let s2 =
            fit.map {
                let r = $0.1 - my - b * ($0.0 - mx); return r * r
            }.reduce(0, +) / (n - 2)
        let v = s2 / k + s2 / n + (rt - mx) * (rt - mx) * s2 / sxx
        return v > 0 ? fallen / v.squareRoot() : nil
    }

    /// `slope_change(d, 5 d, fit: 12 d, min: 2, fit_min: 4)` (and `_z`), two-pass and in the hinge
    /// model's own terms: the residuals e_j of the last 5 days from the line fitted to the 12 before
    /// them, j the day since the break; Σ j e_j / Σ j² per day, its variance s² (1/Σj² + (Σj)²/(Σj²)²
    /// (1/n + (t̄ⱼ − t̄)²/Σ(t − t̄)²)).
    static func slopeChange(_ values: [Int: Double], _ d: Int, _ segment: Int, z: Bool) -> Double? {
        let recentLo = max(d - 4, segment), fitHi = recentLo - 1, fitLo = max(fitHi - 11, segment)
        guard fitLo <= fitHi else { return nil }
        let recent = (recentLo...d).compactMap { k in values[k].map { (Double(k), $0) } }
        let fit = (fitLo...fitHi).compactMap { k in values[k].map { (Double(k), $0) } }
        guard recent.count >= 2, fit.count >= 4 else { return nil }
        let n = Double(fit.count)
        let mx = fit.map(\.0).reduce(0, +) / n, my = fit.map(\.1).reduce(0, +) / n
        let sxx = fit.map { ($0.0 - mx) * ($0.0 - mx) }.reduce(0, +)
        guard sxx > 0 else { return nil }
        let b = fit.map { ($0.0 - mx) * ($0.1 - my) }.reduce(0, +) / sxx
        let j = recent.map { $0.0 - Double(fitHi) }
        let e = recent.map { $0.1 - my - b * ($0.0 - mx) }
        let sj = j.reduce(0, +), sjj = j.map { $0 * $0 }.reduce(0, +)
        let c = zip(j, e).map { $0 * $1 }.reduce(0, +) / sjj
        guard z else { return c / 86_400 }
        let s2 =
            fit.map {
                let r = $0.1 - my - b * ($0.0 - mx); return r * r
            }.reduce(0, +) / (n - 2)
        let tj = zip(j, recent).map { $0 * $1.0 }.reduce(0, +) / sj
        let v = s2 * (1 / sjj + sj * sj / (sjj * sjj) * (1 / n + (tj - mx) * (tj - mx) / sxx))
        return v > 0 ? c / v.squareRoot() : nil
    }

    @Test func slopeChangeMatchesAHandComputation() {
        // fit on days 1-5 [1, 3, 2, 5, 4]: the line 3 + 0.8 (t - 3), residual variance 1.2; days 6-7
        // [4, 4.5] lie 1.4 and 1.7 below it (5.4, 6.2), one and two days after the break: the slope
        // change is (1 × -1.4 + 2 × -1.7) / (1 + 4) = -0.96 per day; the weighted shortfall 4.8 / 3 = 1.6
        // at the weighted mean day 20/3, variance 1.2 × 5/9 + 1.2/5 + (11/3)² × 1.2/10 = 2.52: z = -1.6 / √2.52
        let out = dailyOutputs(
            """
            series d = mean(walkingSpeed)
            series c = slope_change(d, 2 d, fit: 5 d, fit_min: 5)
            series z = slope_change_z(d, 2 d, fit: 5 d, fit_min: 5)
            """, [1.0, 3, 2, 5, 4, 4, 4.5])
        #expect(abs((out.series("c")[7]! ?? .nan) + 0.96) < 1e-9)  // m/s/d, the series' display unit
        #expect(abs((out.series("z")[7]! ?? .nan) + 1.6 / 2.52.squareRoot()) < 1e-9)
        // a clean stall: a line, then flat; the weights make the slope change exactly the lost slope
        let out2 = dailyOutputs(
            """
            series d = mean(walkingSpeed)
            series c = slope_change(d, 4 d, fit: 6 d)
            """, [1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.5, 1.5, 1.5, 1.5])
        #expect(abs((out2.series("c")[10]! ?? .nan) + 0.1) < 1e-9)
    }

    @Test func shortfallMatchesAHandComputation() {
        // fit on days 1-5 [1, 3, 2, 5, 4]: slope 0.8, mean 3 at day 3, residuals 3.6 in all, variance 3.6 / 3 = 1.2;
        // recent days 6-7 [4, 4.5]: mean 4.25 at day 6.5, the line there 3 + 0.8 × 3.5 = 5.8, so
        // 1.55 below it; its variance 1.2/2 + 1.2/5 + 3.5² × 1.2/10 = 2.31: z = 1.55 / √2.31
        let out = dailyOutputs(
            """
            series d = mean(walkingSpeed)
            series s = shortfall(d, 2 d, fit: 5 d, fit_min: 5)
            series z = shortfall_z(d, 2 d, fit: 5 d, fit_min: 5)
            """, [1.0, 3, 2, 5, 4, 4, 4.5])
        #expect(abs((out.series("s")[7]! ?? .nan) - 1.55) < 1e-9)
        #expect(abs((out.series("z")[7]! ?? .nan) - 1.55 / 2.31.squareRoot()) < 1e-9)
        // day 6: the fit has only days 1-4 (fit_min 5): unknown
        #expect(out.series("s")[6]! == nil)
    }

    /// Student's t, one-sided 95 %, for 1-12 degrees of freedom (standard tables).
    static let t95: [Double] = [6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782]

    /// Two-pass least squares on (day, value): slope and its standard error per second, and t.
    static func slopeFit(_ w: [(Int, Double)], min: Int) -> (slope: Double, error: Double, t: Double)? {
        guard w.count >= min, w.count >= 3 else { return nil }
        let n = Double(w.count)
        let mx = w.map { Double($0.0) }.reduce(0, +) / n, my = w.map(\.1).reduce(0, +) / n
        let sxx = w.map { (Double($0.0) - mx) * (Double($0.0) - mx) }.reduce(0, +)
        let b = w.map { (Double($0.0) - mx) * ($0.1 - my) }.reduce(0, +) / sxx
        let rss = w.map {
            let r = $0.1 - my - b * (Double($0.0) - mx); return r * r
        }.reduce(0, +)
        return (b / 86_400, (rss / (n - 2) / sxx).squareRoot() / 86_400, t95[w.count - 3])
    }

    @Test func slopeBoundsMatchAReference() {
        // scipy.stats.linregress([0,1,2,3,4], [1,3,2,5,4]): slope 0.8, stderr 0.34641; t(0.95, 3) = 2.353
        let out = dailyOutputs(
            """
            series d = mean(walkingSpeed)
            series b = slope(d, 5 d)
            series e = slope_error(d, 5 d)
            series lo = slope_lower(d, 5 d)
            series hi = slope_upper(d, 5 d)
            series sd = stddev(d, 5 d)
            """, [1.0, 3, 2, 5, 4])
        func at5(_ n: String) -> Double { (out.series(n)[5] ?? nil) ?? .nan }
        #expect(abs(at5("b") - 0.8) < 1e-9)
        #expect(abs(at5("e") - 0.346_41) < 1e-5)
        #expect(abs(at5("hi") - (0.8 + 2.353 * 0.346_410_16)) < 1e-6)
        #expect(abs(at5("lo") - (0.8 - 2.353 * 0.346_410_16)) < 1e-6)
        #expect(abs(at5("sd") - 1.581_138_83) < 1e-6)  // numpy std(ddof=1)
        // two days: a slope, but no uncertainty (no residual degree of freedom): unknown
        #expect(out.series("b")[2]! != nil)
        #expect(out.series("e")[2]! == nil)
        #expect(out.series("hi")[2]! == nil)
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func windowsMatchNaiveReference(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        let p = program(Self.rules)
        var engine = Engine(program: p)
        let days = 90
        let injury: Int? = Bool.random(using: &rng) ? Int.random(in: 20...70, using: &rng) : nil
        var values: [Int: Double] = [:]
        var out: [EngineOutput] = []
        if let injury {
            engine.record(
                event: TimelineEvent(id: "inj", category: .clinical, kind: "injury", firstDay: day0 + DayNumber(injury), lastDay: day0 + DayNumber(injury)),
                user: "u")
        }
        let missingRate = Double.random(in: 0...0.5, using: &rng)
        for d in 1...days {
            if d > 1, Double.random(in: 0..<1, using: &rng) < missingRate { continue }
            let v = (Double.random(in: 0.5...1.5, using: &rng) * 1000).rounded() / 1000
            values[d] = v
            engine.ingest(sample("s\(d)", v, day: d), user: "u", now: close(d), into: &out)
        }
        engine.advance(to: close(days), into: &out)
        let ref = Self.reference(values, injury: injury, firstDay: 1)
        for (name, f) in ref {
            let unit = p.series.first { $0.name == name }!.displayUnit
            let got = out.series(name)
            for d in 1...days {
                let g = got[d] ?? nil
                let e = f(d)
                let gs = g.map { unit.si($0) }
                let ok: Bool
                switch (gs, e) {
                case (nil, nil): ok = true
                case let (a?, b?): ok = abs(a - b) <= 1e-6 * max(1, abs(b))
                default: ok = false
                }
                #expect(
                    ok, "seed \(seed) injury \(String(describing: injury)) \(name) day \(d): got \(String(describing: gs)) expected \(String(describing: e))")
            }
        }
    }

    @Test func percentileMethods() {
        // numpy: np.percentile([1,2,3,4], 95) == 3.85; nearest rank: ceil(0.95*4) = 4th value
        let p = program(
            """
            series lin = p95(walkingSpeed)
            series near = percentile(walkingSpeed, 95, method: nearest)
            series med = median(walkingSpeed)
            series p10 = p10(walkingSpeed)
            """)
        var engine = Engine(program: p)
        var out: [EngineOutput] = []
        for (i, v) in [4.0, 1, 3, 2].enumerated() { engine.ingest(sample("s\(i)", v, day: 1, hour: 8 + i), user: "u", now: close(1), into: &out) }
        engine.advance(to: close(1), into: &out)
        #expect(abs((out.series("lin")[1]! ?? 0) - 3.85) < 1e-9)
        #expect(out.series("near")[1]! == 4)
        #expect(abs((out.series("med")[1]! ?? 0) - 2.5) < 1e-9)
        #expect(abs((out.series("p10")[1]! ?? 0) - 1.3) < 1e-9)  // numpy: 1.3
    }
}
