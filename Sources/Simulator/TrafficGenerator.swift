import MobilityModel
import RuleEngine

/// Generates the MQTT traffic a gateway would publish for a persona and timeline: HealthKit-shaped
/// samples (walking speed, double support, asymmetry, step length, weekly 6MWD) in batches as an
/// anchored query would deliver them, plus the profile and clinical events. Deterministic for a seed.
public struct TrafficGenerator: Sendable {
    public var persona: Persona
    public var timeline: Timeline
    public var seed: UInt64
    public var layout = TopicLayout()

    /// Creates a generator.
    public init(persona: Persona, timeline: Timeline, seed: UInt64) {
        self.persona = persona
        self.timeline = timeline
        self.seed = seed
    }

    /// A record with the time it is published (event time of the gateway).
    public struct Timed: Sendable {
        public var at: Timestamp
        public var record: TrafficRecord
    }

    /// The expected daily mean walking speed (m/s) of a day, before noise.
    public func meanSpeed(day d: Int) -> Double {
        let p = persona, t = timeline
        var v = p.walkingSpeed
        if let inj = t.injuryDay, d >= inj {
            let effective = min(d, t.plateauDay ?? Int.max) - inj
            v = min(p.walkingSpeed, p.walkingSpeed * t.dropFactor + t.recoveryPerDay * Double(effective))
        }
        if let hw = t.heatWave, hw.contains(d) { v *= t.heatWaveFactor }
        return v
    }

    /// The expected daily double support (fraction), before noise.
    public func meanDoubleSupport(day d: Int) -> Double {
        let p = persona, t = timeline
        var v = p.doubleSupport
        if let inj = t.injuryDay, d >= inj { v = max(p.doubleSupport, t.injuredDoubleSupport + t.doubleSupportPerDay * Double(d - inj)) }
        if let r = t.doubleSupportRegressionDay, d >= r { v += t.regressionPerDay * Double(d - r + 1) }
        return min(0.6, v)
    }

    /// Generates all traffic, in publish order.
    public func generate() -> [Timed] {
        var rng = SplitMix(seed: seed)
        let home = LocalCalendar(identifier: persona.timeZone) ?? .utc
        var out: [Timed] = []
        let startDay = timeline.start.dayNumber - 1
        let user = persona.user
        let first = home.startOfDay(startDay + 1)
        out.append(Timed(at: first.adding(seconds: -3600), record: TrafficRecord(topic: layout.profile(user), payload: Array("{\"timeZone\":\"\(persona.timeZone)\"}".utf8))))
        if let inj = timeline.injuryDay {
            let date = CivilDate(dayNumber: startDay + DayNumber(inj))
            out.append(Timed(at: home.startOfDay(startDay + DayNumber(inj)).adding(seconds: 20 * 3600),
                             record: TrafficRecord(topic: layout.events(user), payload: Array("{\"id\":\"injury-\(user)\",\"kind\":\"injury\",\"date\":\"\(date)\"}".utf8))))
        }
        if let hw = timeline.heatWave {
            let a = CivilDate(dayNumber: startDay + DayNumber(hw.lowerBound)), b = CivilDate(dayNumber: startDay + DayNumber(hw.upperBound))
            out.append(Timed(at: home.startOfDay(startDay + DayNumber(hw.lowerBound)).adding(seconds: 21 * 3600),
                             record: TrafficRecord(topic: layout.events(user), payload: Array("{\"id\":\"heat-\(user)\",\"kind\":\"heat_wave\",\"start\":\"\(a)\",\"end\":\"\(b)\"}".utf8))))
        }
        var offlineBacklog: [String] = []
        for d in 1...timeline.days {
            let dayNumber = startDay + DayNumber(d)
            if timeline.missing.contains(where: { $0.contains(d) }) { continue }
            let zone = timeline.travel.first { $0.0.contains(d) }?.1
            let cal = zone.flatMap { LocalCalendar(identifier: $0) } ?? home
            let dayStart = cal.startOfDay(dayNumber)
            let n = Int.random(in: persona.samplesPerDay, using: &rng)
            let dayMean = meanSpeed(day: d) + rng.normal() * persona.speedNoise * 0.4
            let dsMean = meanDoubleSupport(day: d) + rng.normal() * persona.doubleSupportNoise * 0.5
            // Samples by hour: a gateway delivers each hour's new samples in one batch.
            var byHour: [Int: [String]] = [:]
            for k in 0..<n {
                let second = 8 * 3600 + Int((Double(k) + rng.uniform()) / Double(n) * 12 * 3600)
                let end = dayStart.adding(seconds: Int64(second))
                let start = end.adding(seconds: -Int64(20 + Int(rng.uniform() * 40)))
                let hour = second / 3600
                let speed = max(0.2, dayMean + rng.normal() * persona.speedNoise)
                let imperial = rng.uniform() < persona.imperialShare
                let offset = Int32(cal.offset(at: end))
                let idBase = "\(user)-\(d)-\(k)"
                byHour[hour, default: []].append(sample(id: idBase + "-ws", type: "HKQuantityTypeIdentifierWalkingSpeed",
                                                        value: imperial ? speed / 0.44704 : speed, unit: imperial ? "mi/hr" : "m/s",
                                                        start: start, end: end, offset: offset, zone: zone))
                if k % 2 == 0 {
                    let ds = min(0.6, max(0.1, dsMean + rng.normal() * persona.doubleSupportNoise))
                    byHour[hour, default: []].append(sample(id: idBase + "-ds", type: "walkingDoubleSupportPercentage", value: ds, unit: "%",
                                                            start: start, end: end, offset: offset, zone: zone))
                    let asym = min(1, max(0, persona.asymmetry + rng.normal() * 0.03))
                    byHour[hour, default: []].append(sample(id: idBase + "-as", type: "walkingAsymmetryPercentage", value: asym, unit: "%",
                                                            start: start, end: end, offset: offset, zone: zone,
                                                            metadata: "\"HKMetadataKeyDevicePlacementSide\":2"))
                    let step = max(0.2, persona.stepLength * speed / persona.walkingSpeed + rng.normal() * 0.02)
                    byHour[hour, default: []].append(sample(id: idBase + "-sl", type: "walkingStepLength", value: step / 0.0254, unit: "in",
                                                            start: start, end: end, offset: offset, zone: zone))
                }
            }
            if let wd = timeline.sixMinuteWalkWeekday, d % 7 == wd {
                let est = min(500, (persona.sixMinuteWalk * meanSpeed(day: d) / persona.walkingSpeed).rounded())
                let end = dayStart.adding(seconds: 7 * 3600)
                let calibrated = d > timeline.uncalibratedUntil ? "1" : "0"
                byHour[7, default: []].append(sample(id: "\(user)-\(d)-6mwd", type: "HKQuantityTypeIdentifierSixMinuteWalkTestDistance", value: est, unit: "m",
                                                     start: end, end: end, offset: Int32(cal.offset(at: end)), zone: zone,
                                                     metadata: "\"HKMetadataKeyAppleDeviceCalibrated\":\"\(calibrated)\""))
            }
            for (cd, metres) in timeline.clinicTests where cd == d {
                let end = dayStart.adding(seconds: 14 * 3600)
                byHour[14, default: []].append(sample(id: "\(user)-\(d)-clinic", type: "sixMinuteWalkTestDistance", value: metres, unit: "m",
                                                      start: end, end: end, offset: Int32(cal.offset(at: end)), zone: zone,
                                                      bundle: "org.example.clinic", metadata: "\"HKWasUserEntered\":\"1\""))
            }
            for hour in byHour.keys.sorted() {
                let payload = "[" + byHour[hour]!.joined(separator: ",") + "]"
                if let off = timeline.offline, off.contains(d) {
                    offlineBacklog.append(payload)
                    if d == off.upperBound, hour == byHour.keys.max() {
                        // back online the next morning: the backlog syncs at once
                        let at = cal.startOfDay(dayNumber + 1).adding(seconds: 9 * 3600)
                        for p in offlineBacklog { out.append(Timed(at: at, record: TrafficRecord(topic: layout.samples(user), payload: Array(p.utf8)))) }
                        offlineBacklog.removeAll()
                    }
                    continue
                }
                let at = dayStart.adding(seconds: Int64((hour + 1) * 3600))
                out.append(Timed(at: at, record: TrafficRecord(topic: layout.samples(user), payload: Array(payload.utf8))))
            }
        }
        return out.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
    }

    func sample(id: String, type: String, value: Double, unit: String, start: Timestamp, end: Timestamp, offset: Int32, zone: String?,
                bundle: String = "com.apple.health.9C2F5E1A", metadata: String? = nil) -> String {
        var s = "{\"id\":\"\(id)\",\"type\":\"\(type)\",\"value\":\((value * 100_000).rounded() / 100_000),\"unit\":\"\(unit)\","
        s += "\"start\":\"\(ISO8601.format(start, offsetSeconds: offset))\",\"end\":\"\(ISO8601.format(end, offsetSeconds: offset))\","
        s += "\"source\":{\"bundleId\":\"\(bundle)\",\"name\":\"\(persona.user)'s iPhone\"}"
        var md: [String] = []
        if let zone { md.append("\"HKTimeZone\":\"\(zone)\"") }
        if let metadata { md.append(metadata) }
        if !md.isEmpty { s += ",\"metadata\":{" + md.joined(separator: ",") + "}" }
        return s + "}"
    }
}

/// SplitMix64 with the helpers the generator needs.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func uniform() -> Double { Double(next() >> 11) / Double(1 << 53) }
    /// Standard normal (Box–Muller).
    mutating func normal() -> Double {
        let u1 = max(uniform(), 1e-12), u2 = uniform()
        return (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
    }
}

import Foundation
