import Dispatch
import Ingest
import MobilityModel
import RuleEngine
import RuleLanguage
import Synchronization

/// A synthetic cohort: many users with a configurable mix of recovery patterns, streamed day by
/// day (one day of the cohort in memory at a time), with ground-truth labels for measuring alert
/// precision and recall.
package struct Population: Sendable {
    /// The number of users in the cohort (`u0` … `u<users-1>`).
    package let users: Int
    /// The number of days simulated for each user.
    package let days: Int
    /// The cohort's seed; each user's persona, pattern and traffic derive from it and the user's index.
    package let seed: UInt64
    /// At most this many samples a message (``TrafficGenerator/samplesPerMessage``; nil: hourly batches).
    package var samplesPerMessage: Int?
    /// Each phone syncs every this many days (``TrafficGenerator/syncDays``; nil: as it goes).
    package var syncDays: Int?

    /// Which generator shapes the cohort: `default` is the original mix (its numbers stay
    /// reproducible); `wide` adds shapes the rules were not tuned on (see docs/alert-quality.md).
    package let cohort: Cohort

    /// The cohort generators.
    package enum Cohort: String, CaseIterable, Sendable {
        /// The original mix of nine patterns.
        case `default`
        /// Slow-but-steady recoveries across the range, drifting plateaus, relapses, sparse, noisy
        /// and quiet users, heat waves, travel and missing days in the decisive weeks.
        case wide
        /// The patients clinics have: slow-start, S-shaped and slow full recoveries, illness weeks
        /// (annotated half the time), day effects that carry over and weekday patterns, days with
        /// 1–5 samples, phones left at home, late-entered injuries, multi-day syncs, double-support
        /// rises of 2–6 points (see docs/alert-quality.md and ``Population/clinic(_:_:_:injury:rng:)``).
        case clinic
    }

    /// The recovery patterns and their share of the cohort.
    package enum Pattern: String, CaseIterable, Sendable {
        case normal, slowRecovery = "slow_recovery", stalled, regressing, heatWave = "heat_wave", gap, travel, slowWalker = "slow_walker", uncalibrated
        /// Wide cohort: recovering steadily at 0.005–0.010 m/s a day (a meaningful gain every two weeks).
        case slowSteady = "slow_steady"
        /// Wide cohort: recovery stops, then creeps upward at most 0.0015 m/s a day.
        case driftingPlateau = "drifting_plateau"
        /// Wide cohort: recovery stops and walking speed falls again for 10–20 days.
        case relapse
        /// Clinic cohort: a straight recovery that reaches the baseline only 50–60 days after the injury.
        case slowFull = "slow_full"
        /// Clinic cohort: 7–21 days without gain, then a recovery reaching the baseline by day 40–60.
        case slowStart = "slow_start"
        /// Clinic cohort: an S-shaped (logistic) recovery, half-way 18–30 days after the injury.
        case sCurve = "s_curve"

        /// The default cohort's patterns, in the order the share roll walks them.
        static let defaultMix: [(Pattern, Double)] = [
            (.normal, 0.28), (.slowRecovery, 0.07), (.stalled, 0.15), (.regressing, 0.10), (.heatWave, 0.10),
            (.gap, 0.10), (.travel, 0.05), (.slowWalker, 0.05), (.uncalibrated, 0.10)
        ]
        /// The wide cohort's patterns and shares.
        static let wideMix: [(Pattern, Double)] = [
            (.normal, 0.20), (.slowSteady, 0.22), (.stalled, 0.14), (.driftingPlateau, 0.12), (.relapse, 0.12),
            (.regressing, 0.06), (.gap, 0.05), (.slowWalker, 0.04), (.uncalibrated, 0.05)
        ]
        /// The clinic cohort's patterns and shares.
        static let clinicMix: [(Pattern, Double)] = [
            (.normal, 0.16), (.slowFull, 0.12), (.slowStart, 0.10), (.sCurve, 0.10), (.stalled, 0.12), (.driftingPlateau, 0.08),
            (.relapse, 0.08), (.regressing, 0.12), (.gap, 0.04), (.slowWalker, 0.04), (.uncalibrated, 0.04)
        ]

        /// The alerts that should fire for this pattern (the ground truth).
        var expected: Set<String> {
            switch self {
            case .stalled, .driftingPlateau, .relapse: ["stalled_recovery"]
            case .regressing: ["double_support_regression"]
            case .gap: ["data_gap"]
            case .slowWalker: ["low_gait_speed"]
            case .uncalibrated: ["uncalibrated_6mwd"]
            case .normal, .slowRecovery, .heatWave, .travel, .slowSteady, .slowFull, .slowStart, .sCurve: []
            }
        }
    }

    /// The rules the labels speak about.
    package static let labelledRules = ["stalled_recovery", "double_support_regression", "data_gap", "low_gait_speed", "uncalibrated_6mwd"]

    /// Ground truth for one user.
    package struct Label: Sendable {
        /// Creates a label (the cohort makes them; tests make their own).
        package init(user: String, pattern: Pattern, expected: Set<String>) {
            self.user = user
            self.pattern = pattern
            self.expected = expected
        }
        /// The user id.
        package var user: String
        /// The recovery pattern the user was given.
        package var pattern: Pattern
        /// The labelled rules that should fire for this user (the ground truth).
        package var expected: Set<String>
        /// For each expected rule, the day (1-based) the condition it flags became true: the day
        /// recovery stopped (stall, drifting plateau, relapse), the regression's first day, the
        /// first missing day, the first watch estimate, day 1 for a slow walker.
        package var onset: [String: Int] = [:]
        /// The injury day (1-based), if any.
        package var injuryDay: Int?
        /// The number of days simulated.
        package var days: Int = 0
        /// The wide cohort's modifiers of this user: `sparse`, `noisy`, `quiet`, `heat_wave`,
        /// `travel`, `missing_days` (empty in the default cohort).
        package var traits: [String] = []
        /// The date of day 1.
        package var start = CivilDate(year: 2026, month: 1, day: 1)
        /// Labelled rules this user is neither a positive nor a negative for: a borderline case
        /// (a double-support rise of 2–3 points) that the report counts on its own.
        package var unscored: Set<String> = []
        /// The first day a calibrated watch's estimate reached the 500 m cap (clinic cohort), which
        /// `uncalibrated_6mwd` flags as provisional; nil when none did.
        package var cappedDay: Int?

        /// The label as one JSON object: user, pattern, `expected` with a boolean per labelled
        /// rule, `onset` with the date each expected rule's condition became true, and `traits`.
        package var json: String {
            var w = JSONWriter()
            w.beginObject()
            w.string("user", user)
            w.string("pattern", pattern.rawValue)
            w.beginObject("expected")
            for r in Population.labelledRules { w.bool(r, expected.contains(r)) }
            w.endObject()
            w.beginObject("onset")
            for r in Population.labelledRules {
                if let d = onset[r] { w.string(r, CivilDate(dayNumber: start.dayNumber + DayNumber(d - 1)).description) }
            }
            w.endObject()
            if !traits.isEmpty {
                w.beginArray("traits")
                for t in traits { w.string(nil, t) }
                w.endArray()
            }
            if !unscored.isEmpty {
                w.beginArray("unscored")
                for r in Population.labelledRules where unscored.contains(r) { w.string(nil, r) }
                w.endArray()
            }
            w.endObject()
            return w.text
        }
    }

    package init(users: Int, days: Int, seed: UInt64, cohort: Cohort = .default) {
        self.users = users
        self.days = days
        self.seed = seed
        self.cohort = cohort
    }

    static let zones = ["America/Los_Angeles", "America/New_York", "Europe/Zurich", "Europe/London", "Asia/Tokyo", "Australia/Sydney"]

    /// The generator of user `i` (cheap: computed on demand, never stored for the whole cohort).
    package func user(_ i: Int) -> (TrafficGenerator, Label) {
        var rng = SplitMix64(seed: seed ^ (UInt64(i) &* 0x9E37_79B9_7F4A_7C15))
        let roll = rng.uniform()
        var acc = 0.0
        var pattern = Pattern.normal
        for (p, share) in cohort == .clinic ? Pattern.clinicMix : cohort == .wide ? Pattern.wideMix : Pattern.defaultMix {
            acc += share
            if roll < acc { pattern = p; break }
        }
        var p = Persona(user: "u\(i)")
        p.timeZone = Population.zones[Int(rng.next() % UInt64(Population.zones.count))]
        p.walkingSpeed = 1.05 + rng.uniform() * 0.45
        p.doubleSupport = 0.24 + rng.uniform() * 0.08
        p.samplesPerDay = 8...24
        p.speedNoise = 0.05 + rng.uniform() * 0.04
        var t = Timeline()
        t.days = days
        let injury = max(8, min(days - 40, 31 + Int(rng.next() % 10)))
        var label = Label(user: p.user, pattern: pattern, expected: pattern.expected)
        var sync = syncDays
        if cohort == .clinic {
            sync = clinic(&p, &t, &label, injury: injury, rng: &rng) ?? syncDays
        } else if cohort == .wide {
            widen(&p, &t, &label, injury: injury, rng: &rng)
        } else {
            switch pattern {
            case .normal:
                t.injuryDay = injury
                t.recoveryPerDay = 0.010 + rng.uniform() * 0.006
            case .slowRecovery:
                // Borderline: slow but still improving (near the rule's 0.005 m/s/d), not a stall.
                t.injuryDay = injury
                t.dropFactor = 0.7
                t.recoveryPerDay = 0.0055 + rng.uniform() * 0.0025
                t.injuredDoubleSupport = p.doubleSupport + 0.05
                t.doubleSupportPerDay = 0
            case .stalled:
                t.injuryDay = injury
                t.plateauDay = injury + 12 + Int(rng.next() % 8)
                t.injuredDoubleSupport = p.doubleSupport + 0.06
                t.doubleSupportPerDay = 0
            case .regressing:
                t.doubleSupportRegressionDay = 30 + Int(rng.next() % 20)
                t.regressionPerDay = 0.004 + rng.uniform() * 0.002
            case .heatWave:
                t.injuryDay = injury
                t.recoveryPerDay = 0.011
                let start = injury + 22 + Int(rng.next() % 6)
                t.heatWave = start...(start + 10)
                t.heatWaveFactor = 0.8
            case .gap:
                let start = 20 + Int(rng.next() % 40)
                t.missing = [start...(start + 3 + Int(rng.next() % 4))]
            case .travel:
                let start = 20 + Int(rng.next() % 40)
                t.travel = [(start...(start + 6), Population.zones[Int(rng.next() % UInt64(Population.zones.count))])]
            case .slowWalker:
                p.walkingSpeed = 0.55 + rng.uniform() * 0.1
            case .uncalibrated:
                t.uncalibratedUntil = 14 + Int(rng.next() % 14)
            case .slowSteady, .driftingPlateau, .relapse, .slowFull, .slowStart, .sCurve:
                break  // wide and clinic cohorts only
            }
        }
        if pattern != .uncalibrated { t.uncalibratedUntil = 0 }
        label.injuryDay = t.injuryDay
        label.days = days
        label.start = t.start
        if cohort != .clinic { label.onset = Population.onsets(pattern, t) }
        var g = TrafficGenerator(persona: p, timeline: t, seed: seed &+ UInt64(i))
        g.samplesPerMessage = samplesPerMessage
        g.syncDays = sync
        return (g, label)
    }

    /// The day each expected rule's condition became true, from the timeline (the ground truth).
    static func onsets(_ pattern: Pattern, _ t: Timeline) -> [String: Int] {
        var o: [String: Int] = [:]
        for r in pattern.expected {
            switch r {
            case "stalled_recovery": o[r] = t.plateauDay
            case "double_support_regression": o[r] = t.doubleSupportRegressionDay
            case "data_gap": o[r] = t.missing.first?.lowerBound
            case "low_gait_speed": o[r] = 1
            case "uncalibrated_6mwd":
                // The first watch estimate (while uncalibrated).
                if let wd = t.sixMinuteWalkWeekday { o[r] = (1...7).first { $0 % 7 == wd } }
            default: break
            }
        }
        return o
    }

    /// The wide cohort's shapes and modifiers (see `Cohort.wide`).
    func widen(_ p: inout Persona, _ t: inout Timeline, _ label: inout Label, injury: Int, rng: inout SplitMix64) {
        let base = p.walkingSpeed
        var injured = true
        switch label.pattern {
        case .normal:
            t.recoveryPerDay = 0.010 + rng.uniform() * 0.006
        case .slowSteady:
            // Slow but steady across the range: 0.005–0.010 m/s a day is 0.07–0.14 m/s in two
            // weeks, at least the small meaningful change (0.05 m/s, Perera 2006): not a stall.
            t.dropFactor = 0.55 + rng.uniform() * 0.15
            t.recoveryPerDay = 0.005 + rng.uniform() * 0.005
            t.injuredDoubleSupport = p.doubleSupport + 0.05
            // Half improve their double support slowly, half not at all (no help from gait quality).
            t.doubleSupportPerDay = rng.uniform() < 0.5 ? 0 : -0.0005
        case .stalled, .driftingPlateau, .relapse:
            t.dropFactor = 0.55 + rng.uniform() * 0.1
            t.recoveryPerDay = 0.008 + rng.uniform() * 0.008
            t.injuredDoubleSupport = p.doubleSupport + 0.06
            t.doubleSupportPerDay = 0
            // Recovery stops 10–30 days after the injury, while still at least 0.15 m/s below
            // baseline (a clear stall, not a near-complete recovery).
            let room = (base - 0.15 - base * t.dropFactor) / t.recoveryPerDay
            let k = min(Int(room), 10 + Int(rng.next() % 21))
            t.plateauDay = injury + max(5, k)
            let level = base * t.dropFactor + t.recoveryPerDay * Double(max(5, k))
            if label.pattern == .driftingPlateau {
                // Creeping upward, at most 0.0015 m/s a day (under 0.021 m/s in two weeks), never
                // closer than 0.12 m/s to baseline by the end of the 60-day recovery.
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
            t.doubleSupportRegressionDay = 30 + Int(rng.next() % 20)
            t.regressionPerDay = 0.004 + rng.uniform() * 0.002
        case .gap:
            let start = 20 + Int(rng.next() % 40)
            t.missing = [start...(start + 3 + Int(rng.next() % 4))]
        case .slowWalker:
            p.walkingSpeed = 0.55 + rng.uniform() * 0.1
        case .uncalibrated:
            t.uncalibratedUntil = 14 + Int(rng.next() % 14)
        default: break
        }
        // Modifiers, independent of the shape.
        let samples = rng.uniform(), noise = rng.uniform(), disruption = rng.uniform()
        if samples < 0.2 {
            p.samplesPerDay = 2...5
            label.traits.append("sparse")
        }
        if noise < 0.15 {
            p.speedNoise = 0.10 + rng.uniform() * 0.03
            label.traits.append("noisy")
        } else if noise < 0.30 {
            p.speedNoise = 0.02 + rng.uniform() * 0.02
            label.traits.append("quiet")
        }
        guard injured else { return }
        t.injuryDay = injury
        // Disruptions in the decisive weeks (2–6 weeks after the injury).
        let at = injury + 14 + Int(rng.next() % 20)
        if disruption < 0.15 {
            t.heatWave = at...(at + 10)
            t.heatWaveFactor = 0.8 + rng.uniform() * 0.1
            label.traits.append("heat_wave")
        } else if disruption < 0.25 {
            t.travel = [(at...(at + 6), Population.zones[Int(rng.next() % UInt64(Population.zones.count))])]
            label.traits.append("travel")
        } else if disruption < 0.35 {
            // Two short runs of missing days (under data_gap's 3 days).
            t.missing = [at...(at + Int(rng.next() % 2)), (at + 6)...(at + 7)]
            label.traits.append("missing_days")
        }
    }

    /// Every user's label.
    package func labels() -> [Label] { (0..<users).map { user($0).1 } }

    /// The traffic, generated lazily one cohort-day at a time (a phone that syncs every N days,
    /// ``syncDays`` or the clinic cohort's own, publishes a sync block of days on the block's
    /// last day), in publish order within each.
    package func traffic() -> AnySequence<TrafficRecord> {
        let generators = (0..<users).lazy.map { self.user($0).0 }
        let users = self.users, days = self.days
        return AnySequence { () -> AnyIterator<TrafficRecord> in
            var day = 0
            var buffer: [TrafficRecord] = []
            var index = 0
            return AnyIterator {
                while index >= buffer.count {
                    if day >= days { return nil }
                    day += 1
                    var timed: [TrafficGenerator.Timed] = []
                    for u in 0..<users {
                        let g = generators[u]
                        if let block = Population.syncBlock(ending: day, every: g.syncDays, days: days) { timed += g.generate(block: block) }
                    }
                    buffer = timed.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element.record)
                    index = 0
                }
                defer { index += 1 }
                return buffer[index]
            }
        }
    }

    /// The days a phone syncing every `every` days (nil: as it goes) publishes on day `d`: the
    /// block `d` ends (blocks 1…N, N+1…2N, …, the last cut at `days`), nil when `d` ends none.
    static func syncBlock(ending d: Int, every: Int?, days: Int) -> ClosedRange<Int>? {
        guard let n = every, n > 1 else { return d...d }
        guard d % n == 0 || d == days else { return nil }
        return ((d - 1) / n * n + 1)...d
    }
}
