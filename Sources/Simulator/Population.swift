import Dispatch
import MobilityModel
import RuleEngine
import RuleLanguage
import Synchronization

/// A synthetic cohort: many users with a configurable mix of recovery patterns, streamed day by
/// day (one day of the cohort in memory at a time), with ground-truth labels for measuring alert
/// precision and recall.
public struct Population: Sendable {
    /// The number of users in the cohort (`u0` … `u<users-1>`).
    public let users: Int
    /// The number of days simulated for each user.
    public let days: Int
    /// The cohort's seed; each user's persona, pattern and traffic derive from it and the user's index.
    public let seed: UInt64
    /// At most this many samples a message (``TrafficGenerator/samplesPerMessage``; nil: hourly batches).
    public var samplesPerMessage: Int?

    /// The recovery patterns and their share of the cohort.
    public enum Pattern: String, CaseIterable, Sendable {
        case normal, slowRecovery = "slow_recovery", stalled, regressing, heatWave = "heat_wave", gap, travel, slowWalker = "slow_walker", uncalibrated

        /// Share of the cohort (sums to 1).
        var share: Double {
            switch self {
            case .normal: 0.28
            case .slowRecovery: 0.07
            case .stalled: 0.15
            case .regressing: 0.10
            case .heatWave: 0.10
            case .gap: 0.10
            case .travel: 0.05
            case .slowWalker: 0.05
            case .uncalibrated: 0.10
            }
        }

        /// The alerts that should fire for this pattern (the ground truth).
        var expected: Set<String> {
            switch self {
            case .stalled: ["stalled_recovery"]
            case .regressing: ["double_support_regression"]
            case .gap: ["data_gap"]
            case .slowWalker: ["low_gait_speed"]
            case .uncalibrated: ["uncalibrated_6mwd"]
            case .normal, .slowRecovery, .heatWave, .travel: []
            }
        }
    }

    /// The rules the labels speak about.
    public static let labelledRules = ["stalled_recovery", "double_support_regression", "data_gap", "low_gait_speed", "uncalibrated_6mwd"]

    /// Ground truth for one user.
    public struct Label: Sendable {
        /// The user id.
        public var user: String
        /// The recovery pattern the user was given.
        public var pattern: Pattern
        /// The labelled rules that should fire for this user (the ground truth).
        public var expected: Set<String>
        /// The label as one JSON object: user, pattern and `expected` with a boolean per labelled rule.
        public var json: String {
            var w = JSONWriter()
            w.beginObject()
            w.string("user", user)
            w.string("pattern", pattern.rawValue)
            w.beginObject("expected")
            for r in Population.labelledRules { w.bool(r, expected.contains(r)) }
            w.endObject()
            w.endObject()
            return w.text
        }
    }

    /// Creates a cohort description.
    public init(users: Int, days: Int, seed: UInt64) {
        self.users = users
        self.days = days
        self.seed = seed
    }

    static let zones = ["America/Los_Angeles", "America/New_York", "Europe/Zurich", "Europe/London", "Asia/Tokyo", "Australia/Sydney"]

    /// The generator of user `i` (cheap: computed on demand, never stored for the whole cohort).
    public func user(_ i: Int) -> (TrafficGenerator, Label) {
        var rng = SplitMix(seed: seed ^ (UInt64(i) &* 0x9E37_79B9_7F4A_7C15))
        let roll = rng.uniform()
        var acc = 0.0
        var pattern = Pattern.normal
        for p in Pattern.allCases { acc += p.share; if roll < acc { pattern = p; break } }
        var p = Persona(user: "u\(i)")
        p.timeZone = Population.zones[Int(rng.next() % UInt64(Population.zones.count))]
        p.walkingSpeed = 1.05 + rng.uniform() * 0.45
        p.doubleSupport = 0.24 + rng.uniform() * 0.08
        p.samplesPerDay = 8...24
        p.speedNoise = 0.05 + rng.uniform() * 0.04
        var t = Timeline()
        t.days = days
        let injury = max(8, min(days - 40, 31 + Int(rng.next() % 10)))
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
        }
        if pattern != .uncalibrated { t.uncalibratedUntil = 0 }
        var g = TrafficGenerator(persona: p, timeline: t, seed: seed &+ UInt64(i))
        g.samplesPerMessage = samplesPerMessage
        return (g, Label(user: p.user, pattern: pattern, expected: pattern.expected))
    }

    /// Every user's label.
    public func labels() -> [Label] { (0..<users).map { user($0).1 } }

    /// The traffic, generated lazily one cohort-day at a time, in publish order within each day.
    public func traffic() -> AnySequence<TrafficRecord> {
        let generators = (0..<users).lazy.map { self.user($0).0 }
        let users = self.users, days = self.days
        return AnySequence { () -> AnyIterator<TrafficRecord> in
            var day = 0
            var buffer: [TrafficRecord] = []
            var index = 0
            return AnyIterator {
                while index >= buffer.count {
                    day += 1
                    if day > days { return nil }
                    var timed: [TrafficGenerator.Timed] = []
                    for u in 0..<users { timed += generators[u].generate(day: day) }
                    buffer = timed.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element.record)
                    index = 0
                }
                defer { index += 1 }
                return buffer[index]
            }
        }
    }
}

extension Population {
    /// Per-rule confusion counts against the labels.
    public struct Quality: Sendable {
        public var truePositive = 0, falsePositive = 0, falseNegative = 0, trueNegative = 0
        /// Zero counts.
        public init() {}
        /// Of the users alerted, the fraction that should have been (nil when none was alerted).
        public var precision: Double? { truePositive + falsePositive == 0 ? nil : Double(truePositive) / Double(truePositive + falsePositive) }
        /// Of the users that should have been alerted, the fraction that were (nil when none should have been).
        public var recall: Double? { truePositive + falseNegative == 0 ? nil : Double(truePositive) / Double(truePositive + falseNegative) }
    }

    /// Streams the cohort through in-process engines (event time) and scores each labelled rule:
    /// a user counts as alerted when the rule fired at least once.
    ///
    /// Users are independent, so each of `threads` threads replays its share of them (user `i` on
    /// thread `i % threads`), each user's traffic day by day in that user's publish order — the
    /// order the cohort's ``traffic()`` gives each user — so the scores do not depend on `threads`.
    public func evaluate(program: Program, threads: Int = 1) -> (quality: [String: Quality], messages: Int, firedBy: [String: [Pattern: Int]]) {
        let n = max(1, min(threads, users))
        let parts = Mutex<[(fired: [String: Set<String>], messages: Int)]>([])
        DispatchQueue.concurrentPerform(iterations: n) { t in
            var ing = Ingestor(
                engine: Engine(
                    program: program,
                    configuration: {
                        var c = EngineConfiguration(); c.publishSeries = false; return c
                    }()), clock: .event)
            var out: [EngineOutput] = []
            var fired: [String: Set<String>] = [:]
            var messages = 0
            for i in stride(from: t, to: users, by: n) {
                let g = user(i).0
                for d in 1...max(days, 1) {
                    let timed = g.generate(day: d)
                    for r in timed.enumerated().sorted(by: { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }) {
                        ing.handle(topic: r.element.record.topic, payload: r.element.record.payload, now: Timestamp(seconds: 0), into: &out)
                        messages += 1
                        for o in out { if case .alert(let a) = o, a.status == .firing { fired[a.rule, default: []].insert(a.user) } }
                        out.removeAll(keepingCapacity: true)
                    }
                }
            }
            parts.withLock { $0.append((fired, messages)) }
        }
        var fired: [String: Set<String>] = [:]
        var messages = 0
        for p in parts.withLock({ $0 }) {
            messages += p.messages
            for (rule, set) in p.fired { fired[rule, default: []].formUnion(set) }
        }
        var quality: [String: Quality] = [:]
        var firedBy: [String: [Pattern: Int]] = [:]
        for label in labels() {
            for rule in Population.labelledRules {
                let did = fired[rule]?.contains(label.user) ?? false
                let should = label.expected.contains(rule)
                var q = quality[rule] ?? Quality()
                switch (should, did) {
                case (true, true): q.truePositive += 1
                case (false, true): q.falsePositive += 1
                case (true, false): q.falseNegative += 1
                case (false, false): q.trueNegative += 1
                }
                quality[rule] = q
                if did { firedBy[rule, default: [:]][label.pattern, default: 0] += 1 }
            }
        }
        return (quality, messages, firedBy)
    }
}
