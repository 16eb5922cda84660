import Foundation
import Ingest
import MobilityModel
import MobilityWire
import RuleEngine

/// Generates the MQTT traffic a gateway would publish for a persona and timeline: HealthKit-shaped
/// samples (walking speed, double support, asymmetry, step length, weekly 6MWD) in batches as an
/// anchored query would deliver them, plus the profile and clinical events. Deterministic for a seed.
package struct TrafficGenerator: Sendable {
    /// The simulated person.
    package var persona: Persona
    /// What happens to the person day by day.
    package var timeline: Timeline
    /// The random seed; the same seed, persona and timeline give the same traffic.
    package var seed: UInt64
    /// The topics the traffic is addressed to.
    package var layout = TopicLayout()
    /// Days whose first walking-speed sample is retracted the next morning.
    package var deletions: [Int] = []
    /// At most this many samples a message (nil: each hour's samples in one batch, as an anchored
    /// query delivers them); 1 publishes each sample as a message of its own (a bare object).
    package var samplesPerMessage: Int?
    /// The phone syncs every this many days (nil: as it goes): the samples of each block of
    /// `syncDays` days (days 1…N, N+1…2N, …) are published together at 07:00 (home time) the
    /// morning after the block, in messages of at most ``samplesPerMessage`` samples that run
    /// across the block's days in time order; the block's other records (clinical events,
    /// deletions) follow them. See ``generate(block:)``.
    package var syncDays: Int?

    package init(persona: Persona, timeline: Timeline, seed: UInt64) {
        self.persona = persona
        self.timeline = timeline
        self.seed = seed
    }

    /// A record with the time it is published (event time of the gateway).
    package struct Timed: Sendable {
        /// When the gateway publishes the record (event time).
        package var at: Timestamp
        /// The topic and payload published.
        package var record: TrafficRecord
    }

    /// The expected daily mean walking speed (m/s) of a day, before noise.
    package func meanSpeed(day d: Int) -> Double {
        let t = timeline
        var v = course(day: d)
        if let hw = t.heatWave, hw.contains(d) { v *= t.heatWaveFactor }
        if let ill = t.illness, ill.contains(d) { v *= t.illnessFactor }
        return v
    }

    /// The recovery's course (m/s): the expected walking speed without passing conditions (heat,
    /// illness).
    package func course(day d: Int) -> Double {
        let p = persona, t = timeline
        var v = p.walkingSpeed
        if let inj = t.injuryDay, d >= inj {
            let effective = min(d, t.plateauDay ?? Int.max) - inj
            v = min(p.walkingSpeed, regained(days: effective))
            if let plateau = t.plateauDay, d > plateau, t.plateauDrift != 0 || t.relapsePerDay != 0 {
                let after = d - plateau
                v = min(p.walkingSpeed, v + t.plateauDrift * Double(after)) - t.relapsePerDay * Double(min(after, t.relapseDays))
            }
        }
        return v
    }

    /// The watch's six-minute-walk estimate on day `d` (m): the expected distance, with the day's
    /// error in the cohorts with day effects, capped at 500 m as the watch caps it.
    package func sixMinuteWalkEstimate(day d: Int) -> Double {
        var est = persona.sixMinuteWalk * meanSpeed(day: d) / persona.walkingSpeed
        if let e = timeline.dayEffects, d >= 1, d <= e.sixMinuteWalk.count { est = max(50, est + e.sixMinuteWalk[d - 1]) }
        return min(500, est.rounded())
    }

    /// Walking speed `k` days after the injury on the timeline's recovery shape (uncapped).
    func regained(days k: Int) -> Double {
        let base = persona.walkingSpeed, low = base * timeline.dropFactor
        switch timeline.recovery {
        case .linear: return low + timeline.recoveryPerDay * Double(k)
        case .slowStart(let lag): return low + timeline.recoveryPerDay * Double(max(0, k - lag))
        case .logistic(let mid, let width):
            let s0 = 1 / (1 + exp(mid / width)), s = 1 / (1 + exp(-(Double(k) - mid) / width))
            return low + (base - low) * (s - s0) / (1 - s0)
        }
    }

    /// The expected daily double support (fraction), before noise.
    package func meanDoubleSupport(day d: Int) -> Double {
        let p = persona, t = timeline
        var v = p.doubleSupport
        if let perDeficit = t.doubleSupportPerDeficit {
            // Moves with the recovery's course: up by `perDeficit` per unit of relative speed lost.
            v += perDeficit * max(0, 1 - course(day: d) / p.walkingSpeed)
        } else if let inj = t.injuryDay, d >= inj {
            v = max(p.doubleSupport, t.injuredDoubleSupport + t.doubleSupportPerDay * Double(d - inj))
        }
        if let r = t.doubleSupportRegressionDay, d >= r { v += min(t.regressionPerDay * Double(d - r + 1), t.regressionRise ?? .infinity) }
        if let ill = t.illness, ill.contains(d) { v += t.illnessDoubleSupport }
        return min(0.6, v)
    }

    /// Generates all traffic, in publish order.
    package func generate() -> [Timed] {
        var out: [Timed] = []
        for d in 1...max(timeline.days, 1) { out += generate(day: d) }
        return out.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
    }

    /// The traffic recorded on one day (deterministic for the seed and day, independent of other
    /// days, so a cohort can be streamed day by day). Messages of an offline phone carry the time
    /// they are finally synced.
    package func generate(day d: Int) -> [Timed] {
        let topic = layout.samples(persona.user)
        return parts(day: d).map { part in
            switch part {
            case .record(let t): return t
            case .samples(let at, let batch): return Timed(at: at, record: TrafficRecord(topic: topic, payload: payload(batch)))
            }
        }
    }

    /// The traffic of one sync (``syncDays``) covering the days of `block`: the profile keeps its
    /// time (before day 1); every sample of the block's days, in time order, in messages of at
    /// most ``samplesPerMessage`` samples (a message may run across days), then the block's
    /// clinical events and deletions, all at 07:00 home time the morning after the block's last
    /// day. Without ``syncDays`` the days' traffic as ``generate(day:)`` makes it.
    package func generate(block: ClosedRange<Int>) -> [Timed] {
        guard syncDays != nil else { return block.flatMap { generate(day: $0) } }
        let topic = layout.samples(persona.user)
        return parts(block: block).map { part in
            switch part {
            case .record(let t): return t
            case .samples(let at, let batch): return Timed(at: at, record: TrafficRecord(topic: topic, payload: payload(batch)))
            }
        }
    }

    /// The traffic of ``generate(block:)`` before its samples are written as JSON.
    func parts(block: ClosedRange<Int>) -> [Part] {
        let home = LocalCalendar.cached(persona.timeZone) ?? .utc
        let at = home.startOfDay(timeline.start.dayNumber + DayNumber(block.upperBound)).adding(seconds: 7 * 3600)
        let profile = layout.profile(persona.user)
        var early: [Part] = [], late: [Part] = [], items: [SampleSpec] = []
        for d in block {
            for part in parts(day: d) {
                switch part {
                case .record(let t):
                    if t.record.topic == profile { early.append(.record(t)) } else { late.append(.record(Timed(at: at, record: t.record))) }
                case .samples(_, let batch): items += batch
                }
            }
        }
        let size = max(1, samplesPerMessage ?? items.count)
        for first in stride(from: 0, to: items.count, by: size) {
            early.append(.samples(at: at, items[first..<min(first + size, items.count)]))
        }
        return early + late
    }

    /// One sample as generated, before it is written as JSON (``sample(_:)``).
    struct SampleSpec {
        var id: String
        var type: StaticString
        var value: Double
        var unit: StaticString
        var start: Timestamp
        var end: Timestamp
        var offset: Int32
        var zone: String?
        var bundle: StaticString = "com.apple.health.9C2F5E1A"
        var metadata: String?
    }

    /// A day's traffic in publish order: other records as published, samples messages as their samples.
    enum Part {
        case record(Timed)
        case samples(at: Timestamp, ArraySlice<SampleSpec>)
    }

    /// A samples message's payload: one object when ``samplesPerMessage`` is 1, else an array.
    func payload(_ batch: ArraySlice<SampleSpec>) -> [UInt8] {
        if samplesPerMessage == 1, batch.count == 1 { return sample(batch[batch.startIndex]) }
        var payload = [UInt8(ascii: "[")]
        for (k, item) in batch.enumerated() {
            if k > 0 { payload.append(UInt8(ascii: ",")) }
            payload += sample(item)
        }
        payload.append(UInt8(ascii: "]"))
        return payload
    }

    /// The traffic of ``generate(day:)`` before its samples are written as JSON.
    func parts(day d: Int) -> [Part] {
        var rng = SplitMix64(seed: seed &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(d) &* 0xD1B5_4A32_D192_ED03)
        let home = LocalCalendar.cached(persona.timeZone) ?? .utc
        var out: [Part] = []
        let startDay = timeline.start.dayNumber - 1
        let user = persona.user
        let dayNumber = startDay + DayNumber(d)
        if d == 1 {
            out.append(
                .record(
                    Timed(
                        at: home.startOfDay(dayNumber).adding(seconds: -3600),
                        record: TrafficRecord(topic: layout.profile(user), payload: Array("{\"timeZone\":\"\(persona.timeZone)\"}".utf8)))))
        }
        if let inj = timeline.injuryDay, (timeline.injuryEnteredDay ?? inj) == d {
            let date = CivilDate(dayNumber: startDay + DayNumber(inj))
            out.append(
                .record(
                    Timed(
                        at: home.startOfDay(dayNumber).adding(seconds: 20 * 3600),
                        record: TrafficRecord(
                            topic: layout.events(user), payload: Array("{\"id\":\"injury-\(user)\",\"kind\":\"injury\",\"date\":\"\(date)\"}".utf8)))))
        }
        if let hw = timeline.heatWave, hw.lowerBound == d {
            let a = CivilDate(dayNumber: startDay + DayNumber(hw.lowerBound)), b = CivilDate(dayNumber: startDay + DayNumber(hw.upperBound))
            out.append(
                .record(
                    Timed(
                        at: home.startOfDay(dayNumber).adding(seconds: 21 * 3600),
                        record: TrafficRecord(
                            topic: layout.events(user),
                            payload: Array("{\"id\":\"heat-\(user)\",\"kind\":\"heat_wave\",\"start\":\"\(a)\",\"end\":\"\(b)\"}".utf8))
                    )))
        }
        if let ill = timeline.illness, timeline.illnessAnnotated, ill.lowerBound == d {
            let a = CivilDate(dayNumber: startDay + DayNumber(ill.lowerBound)), b = CivilDate(dayNumber: startDay + DayNumber(ill.upperBound))
            out.append(
                .record(
                    Timed(
                        at: home.startOfDay(dayNumber).adding(seconds: 21 * 3600 + 60),
                        record: TrafficRecord(
                            topic: layout.events(user),
                            payload: Array("{\"id\":\"illness-\(user)\",\"kind\":\"illness\",\"start\":\"\(a)\",\"end\":\"\(b)\"}".utf8))
                    )))
        }
        if timeline.missing.contains(where: { $0.contains(d) }) { return out }
        let zone = timeline.travel.first { $0.0.contains(d) }?.1
        let cal = zone.flatMap { LocalCalendar.cached($0) } ?? home
        let dayStart = cal.startOfDay(dayNumber)
        let effects = timeline.dayEffects
        let n: Int, dayMean: Double, dsMean: Double, stepMean: Double
        if let e = effects, d >= 1, d <= e.samples.count {
            // The cohort's own day-by-day model: day effects that carry over, weekday patterns,
            // sample counts per day; step length with noise of its own (not a copy of the speed).
            n = e.samples[d - 1]
            dayMean = meanSpeed(day: d) + e.speed[d - 1]
            dsMean = meanDoubleSupport(day: d) + e.doubleSupport[d - 1]
            stepMean = persona.stepLength * (meanSpeed(day: d) / persona.walkingSpeed).squareRoot() * (1 + e.stepLength[d - 1])
        } else {
            n = Int.random(in: persona.samplesPerDay, using: &rng)
            dayMean = meanSpeed(day: d) + rng.normal() * persona.speedNoise * 0.4
            dsMean = meanDoubleSupport(day: d) + rng.normal() * persona.doubleSupportNoise * 0.5
            stepMean = .nan
        }
        // Samples by hour: a gateway delivers each hour's new samples in one batch.
        var byHour: [Int: [SampleSpec]] = [:]
        for k in 0..<n {
            let second = 8 * 3600 + Int((Double(k) + rng.uniform()) / Double(n) * 12 * 3600)
            let end = dayStart.adding(seconds: Int64(second))
            let start = end.adding(seconds: -Int64(20 + Int(rng.uniform() * 40)))
            let hour = second / 3600
            let speed = max(0.2, dayMean + rng.normal() * persona.speedNoise)
            let imperial = rng.uniform() < persona.imperialShare
            let offset = Int32(cal.offset(at: end))
            byHour[hour, default: []].append(
                SampleSpec(
                    id: sampleID(d, k, "-ws"), type: "HKQuantityTypeIdentifierWalkingSpeed",
                    value: imperial ? speed / 0.44704 : speed, unit: imperial ? "mi/hr" : "m/s",
                    start: start, end: end, offset: offset, zone: zone))
            if k % 2 == 0 {
                let ds = min(0.6, max(0.1, dsMean + rng.normal() * persona.doubleSupportNoise))
                byHour[hour, default: []].append(
                    SampleSpec(
                        id: sampleID(d, k, "-ds"), type: "walkingDoubleSupportPercentage", value: ds, unit: "%",
                        start: start, end: end, offset: offset, zone: zone))
                let asym = min(1, max(0, persona.asymmetry + rng.normal() * 0.03))
                byHour[hour, default: []].append(
                    SampleSpec(
                        id: sampleID(d, k, "-as"), type: "walkingAsymmetryPercentage", value: asym, unit: "%",
                        start: start, end: end, offset: offset, zone: zone,
                        metadata: "\"HKMetadataKeyDevicePlacementSide\":2"))
                let step =
                    stepMean.isNaN
                    ? max(0.2, persona.stepLength * speed / persona.walkingSpeed + rng.normal() * 0.02)
                    : max(0.2, stepMean + rng.normal() * persona.stepLengthNoise)
                byHour[hour, default: []].append(
                    SampleSpec(
                        id: sampleID(d, k, "-sl"), type: "walkingStepLength", value: step / 0.0254, unit: "in",
                        start: start, end: end, offset: offset, zone: zone))
            }
        }
        // The watch: a few stair ascents a day, and the weekly six-minute-walk estimate.
        for k in 0..<Int.random(in: 0...3, using: &rng) {
            let end = dayStart.adding(seconds: Int64(10 * 3600 + k * 5400))
            let v = max(0.1, 0.45 * meanSpeed(day: d) / persona.walkingSpeed + rng.normal() * 0.05)
            byHour[10 + k, default: []].append(
                SampleSpec(
                    id: "\(user)-\(d)-\(k)-sa", type: "stairAscentSpeed", value: v, unit: "m/s",
                    start: end.adding(seconds: -15), end: end, offset: Int32(cal.offset(at: end)), zone: zone,
                    bundle: "com.apple.health.5A1E7C3B"))
        }
        if let wd = timeline.sixMinuteWalkWeekday, d % 7 == wd {
            let est = sixMinuteWalkEstimate(day: d)
            let end = dayStart.adding(seconds: 7 * 3600)
            let calibrated = d > timeline.uncalibratedUntil ? "1" : "0"
            byHour[7, default: []].append(
                SampleSpec(
                    id: "\(user)-\(d)-6mwd", type: "HKQuantityTypeIdentifierSixMinuteWalkTestDistance", value: est, unit: "m",
                    start: end, end: end, offset: Int32(cal.offset(at: end)), zone: zone,
                    bundle: "com.apple.health.5A1E7C3B",
                    metadata: "\"HKMetadataKeyAppleDeviceCalibrated\":\"\(calibrated)\""))
        }
        for (cd, metres) in timeline.clinicTests where cd == d {
            let end = dayStart.adding(seconds: 14 * 3600)
            byHour[14, default: []].append(
                SampleSpec(
                    id: "\(user)-\(d)-clinic", type: "sixMinuteWalkTestDistance", value: metres, unit: "m",
                    start: end, end: end, offset: Int32(cal.offset(at: end)), zone: zone,
                    bundle: "org.example.clinic", metadata: "\"HKWasUserEntered\":\"1\""))
        }
        if deletions.contains(d) {
            let at = cal.startOfDay(dayNumber + 1).adding(seconds: 8 * 3600 + 1800)
            out.append(.record(Timed(at: at, record: TrafficRecord(topic: layout.deletions(user), payload: Array("{\"ids\":[\"\(user)-\(d)-0-ws\"]}".utf8)))))
        }
        for hour in byHour.keys.sorted() {
            var at = dayStart.adding(seconds: Int64((hour + 1) * 3600))
            if let off = timeline.offline, off.contains(d) {
                // Offline: the backlog syncs at 07:00 the morning after, before that day's own samples.
                at = home.startOfDay(startDay + DayNumber(off.upperBound) + 1).adding(seconds: Int64(7 * 3600 + d * 10 + hour))
            }
            let items = byHour[hour]!
            let size = max(1, samplesPerMessage ?? items.count)
            for first in stride(from: 0, to: items.count, by: size) { out.append(.samples(at: at, items[first..<min(first + size, items.count)])) }
        }
        return out
    }

    /// `"\(user)-\(d)-\(k)\(suffix)"`, written as bytes: string interpolation cost more than the
    /// rest of a sample's generation (the cohort benchmarks name millions of samples).
    func sampleID(_ d: Int, _ k: Int, _ suffix: StaticString) -> String {
        let user = persona.user.utf8
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: user.count + 48) { buf in
            var n = 0
            for c in user { buf[n] = c; n += 1 }
            func number(_ v: Int) {
                buf[n] = UInt8(ascii: "-")
                n += 1
                var x = v, digits = 1
                while x >= 10 { x /= 10; digits += 1 }
                x = v
                for j in stride(from: digits - 1, through: 0, by: -1) {
                    buf[n + j] = UInt8(ascii: "0") + UInt8(x % 10)
                    x /= 10
                }
                n += digits
            }
            number(d)
            number(k)
            for j in 0..<suffix.utf8CodeUnitCount { buf[n] = suffix.utf8Start[j]; n += 1 }
            return String(decoding: UnsafeBufferPointer(rebasing: buf[..<n]), as: UTF8.self)
        }
    }

    /// One sample object's JSON, written straight into bytes (the cohort benchmarks format millions).
    func sample(_ spec: SampleSpec) -> [UInt8] {
        let (id, type, value, unit, start, end, offset, zone, bundle, metadata) = (
            spec.id, spec.type, spec.value, spec.unit, spec.start, spec.end, spec.offset, spec.zone, spec.bundle, spec.metadata
        )
        var s: [UInt8] = []
        s.reserveCapacity(320)
        func add(_ t: StaticString) { s.append(contentsOf: UnsafeBufferPointer(start: t.utf8Start, count: t.utf8CodeUnitCount)) }
        add(#"{"id":""#)
        s.append(contentsOf: id.utf8)
        add(#"","type":""#)
        add(type)
        add(#"","value":"#)
        s.append(contentsOf: ((value * 100_000).rounded() / 100_000).description.utf8)
        add(#","unit":""#)
        add(unit)
        add(#"","start":""#)
        ISO8601.append(start, offsetSeconds: offset, to: &s)
        add(#"","end":""#)
        ISO8601.append(end, offsetSeconds: offset, to: &s)
        add(#"","source":{"bundleId":""#)
        add(bundle)
        add(#"","name":""#)
        s.append(contentsOf: persona.user.utf8)
        add(#"'s iPhone"}"#)
        if zone != nil || metadata != nil {
            add(#","metadata":{"#)
            if let zone {
                add(#""HKTimeZone":""#)
                s.append(contentsOf: zone.utf8)
                add(#"""#)
            }
            if let metadata {
                if zone != nil { add(",") }
                s.append(contentsOf: metadata.utf8)
            }
            add("}")
        }
        add("}")
        return s
    }
}

/// The distributions the generator draws from.
extension SplitMix64 {
    mutating func uniform() -> Double { Double(next() >> 11) / Double(1 << 53) }
    /// Standard normal (Box–Muller).
    mutating func normal() -> Double {
        let u1 = max(uniform(), 1e-12), u2 = uniform()
        return (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
    }
}
