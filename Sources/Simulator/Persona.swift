import MobilityModel

/// Who is simulated: a person's walking at baseline, how their phone and watch record it.
package struct Persona: Sendable, Hashable {
    /// The user id (topic-safe).
    package var user: String
    /// Home IANA time zone.
    package var timeZone: String = "America/Los_Angeles"
    /// Pre-injury walking speed while walking (mean of samples, m/s).
    package var walkingSpeed: Double = 1.25
    /// Pre-injury double-support fraction (0.2–0.4 typical).
    package var doubleSupport: Double = 0.28
    /// Pre-injury walking asymmetry fraction.
    package var asymmetry: Double = 0.05
    /// Step length (m).
    package var stepLength: Double = 0.68
    /// Six-minute-walk distance (m) the watch would estimate uncapped.
    package var sixMinuteWalk: Double = 470
    /// Walking-speed samples per day while walking.
    package var samplesPerDay: ClosedRange<Int> = 10...30
    /// Day-to-day and sample noise (standard deviations, m/s and fraction).
    package var speedNoise: Double = 0.07
    /// Double-support noise (standard deviation, fraction).
    package var doubleSupportNoise: Double = 0.012
    /// Step-length sample noise (standard deviation, m) of the cohorts with day effects
    /// (``DayEffects``); the others scale each speed sample instead.
    package var stepLengthNoise: Double = 0.05
    /// The watch's weekly six-minute-walk estimate's error (standard deviation, m) in the cohorts
    /// with day effects; the others estimate without error.
    package var sixMinuteWalkNoise: Double = 25
    /// Share of speed samples written in mi/hr (display unit of US phones) rather than m/s.
    package var imperialShare: Double = 0.5

    package init(user: String) { self.user = user }
}

/// What happens to the persona, day by day (day 1 is `start`).
package struct Timeline: Sendable, Hashable {
    /// The civil date of day 1 (default 2026-01-01).
    package var start = CivilDate(year: 2026, month: 1, day: 1)
    /// The number of days simulated (default 90).
    package var days = 90
    /// The injury (a clinical event), if any.
    package var injuryDay: Int?
    /// The day the injury is entered (published), when later than the injury itself (a clinician
    /// recording it days after the fact); nil: the injury's own day.
    package var injuryEnteredDay: Int?
    /// Walking speed right after the injury, as a fraction of baseline.
    package var dropFactor: Double = 0.55
    /// Recovery speed gained per day after the injury (m/s per day).
    package var recoveryPerDay: Double = 0.012
    /// From this day on, recovery stops (a plateau).
    package var plateauDay: Int?
    /// After the plateau day, walking speed still drifts by this much per day (m/s per day; a
    /// plateau that creeps upward, default 0: flat).
    package var plateauDrift: Double = 0
    /// After the plateau day, walking speed falls by this much per day (m/s per day; a relapse,
    /// default 0) for `relapseDays` days, then stays.
    package var relapsePerDay: Double = 0
    /// How many days the relapse lasts (see `relapsePerDay`).
    package var relapseDays: Int = 0
    /// Double support right after the injury (fraction) and its change per day afterwards.
    package var injuredDoubleSupport: Double = 0.36
    /// Double support's change per day after the injury (fraction per day; negative: improving).
    package var doubleSupportPerDay: Double = -0.0015
    /// When set, double support follows the recovery's course instead of `injuredDoubleSupport`
    /// and `doubleSupportPerDay`: up by this much (fraction) per unit of relative walking speed
    /// lost (0.12: a 45 % slower walk adds 5.4 points), so that it stops improving when walking
    /// speed does.
    package var doubleSupportPerDeficit: Double?
    /// From this day on double support rises by `regressionPerDay` (a gait-quality regression).
    package var doubleSupportRegressionDay: Int?
    /// Double support's rise per day from `doubleSupportRegressionDay` on (fraction per day).
    package var regressionPerDay: Double = 0.004
    /// Days of a heat wave: speed multiplied by `heatWaveFactor`; annotated if `annotate`.
    package var heatWave: ClosedRange<Int>?
    /// The factor walking speed is multiplied by during the heat wave (default 0.85).
    package var heatWaveFactor: Double = 0.85
    /// Days without any data (phone left at home).
    package var missing: [ClosedRange<Int>] = []
    /// Days whose samples arrive late, all at once, at this many hours after the last day's end.
    package var offline: ClosedRange<Int>?
    /// The watch's weekly 6MWD: on these weekdays (day % 7 == weekday) while worn.
    package var sixMinuteWalkWeekday: Int? = 3
    /// Until this day the watch is not calibrated (HKMetadataKeyAppleDeviceCalibrated = 0).
    package var uncalibratedUntil: Int = 0
    /// Clinic six-minute-walk tests: (day, metres).
    package var clinicTests: [(Int, Double)] = []
    /// Travel: (first day, last day, IANA zone) — samples carry the zone they were recorded in.
    package var travel: [(ClosedRange<Int>, String)] = []
    /// How walking speed comes back after the injury (default: a straight line at `recoveryPerDay`).
    package var recovery: RecoveryShape = .linear
    /// Days of an illness (flu, a cold): walking speed multiplied by `illnessFactor`, fewer samples
    /// (`illnessSampleFactor` of them), double support up by `illnessDoubleSupport`; published as
    /// an `illness` annotation only when `illnessAnnotated`.
    package var illness: ClosedRange<Int>?
    /// The factor walking speed is multiplied by during the illness.
    package var illnessFactor: Double = 0.85
    /// The share of a day's samples recorded while ill (the phone is carried less).
    package var illnessSampleFactor: Double = 0.5
    /// Double support's rise while ill (fraction).
    package var illnessDoubleSupport: Double = 0
    /// Whether the illness is annotated (someone entered it).
    package var illnessAnnotated = true
    /// The double-support regression stops rising once it has risen by this much (fraction; nil:
    /// it rises for good), and then stays: a sustained shift.
    package var regressionRise: Double?
    /// Day-by-day noise and sample counts (nil: the default model, independent day effects of
    /// 40 % of the sample noise and `samplesPerDay`).
    package var dayEffects: DayEffects?

    /// The shape of a recovery's walking speed between the injury's drop and the baseline.
    package enum RecoveryShape: Sendable, Hashable {
        /// `recoveryPerDay` every day from the injury on.
        case linear
        /// Nothing regained for `lag` days, then `recoveryPerDay`.
        case slowStart(lag: Int)
        /// A logistic curve from the drop to the baseline, half-way on day `mid` after the
        /// injury, with scale `width` days (an S-shaped recovery: slow, fast, slow).
        case logistic(mid: Double, width: Double)
    }

    package init() {}

    /// Equal when start, length, injury and plateau days are equal (the other fields are not compared).
    package static func == (a: Timeline, b: Timeline) -> Bool {
        a.start == b.start && a.days == b.days && a.injuryDay == b.injuryDay && a.plateauDay == b.plateauDay
    }
    /// Hashes the start and the number of days (consistent with `==`).
    package func hash(into h: inout Hasher) { h.combine(start); h.combine(days) }
}

/// A user's day-by-day noise, drawn once for the whole timeline (day effects that carry over from
/// one day to the next cannot be drawn day by day independently): values indexed by day − 1.
package struct DayEffects: Sendable, Hashable {
    /// Added to the day's mean walking speed (m/s): an AR(1) process plus a weekday/weekend offset.
    package var speed: [Double]
    /// Added to the day's double support (fraction).
    package var doubleSupport: [Double]
    /// The day's step length relative to its expected value (added to 1).
    package var stepLength: [Double]
    /// Walking-speed samples recorded that day (0: the phone stayed at home).
    package var samples: [Int]
    /// The error of the watch's six-minute-walk estimate that day (m), drawn ahead so that the
    /// labels know which estimates reach the 500 m cap.
    package var sixMinuteWalk: [Double]

    /// Creates day effects (all arrays as long as the timeline).
    package init(speed: [Double], doubleSupport: [Double], stepLength: [Double], samples: [Int], sixMinuteWalk: [Double]) {
        self.speed = speed
        self.doubleSupport = doubleSupport
        self.stepLength = stepLength
        self.samples = samples
        self.sixMinuteWalk = sixMinuteWalk
    }
}
