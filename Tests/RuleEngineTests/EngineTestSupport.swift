import MobilityModel
import RuleLanguage
import TestSupport
import Testing

@testable import RuleEngine

func program(_ text: String) -> Program {
    let r = Checker.check(text: text)
    guard let p = r.program else { fatalError("test rules do not check: \(r.diagnostics.map(\.message))") }
    return p
}

let utc = LocalCalendar.utc
let day0 = CivilDate(year: 2026, month: 1, day: 1).dayNumber

/// A sample at hour `h` of day `d` (UTC) in SI units.
func sample(
    _ id: String, _ value: Double, day d: Int, hour h: Int = 12, provenance: Provenance = .device,
    metadata: [String: MetadataValue] = [:]
) -> Sample {
    sample(id, .walkingSpeed, value, day: d, hour: h, provenance: provenance, metadata: metadata)
}

/// A sample of any metric.
func sample(
    _ id: String, _ metric: MetricKind, _ value: Double, day d: Int, hour h: Int = 12,
    provenance: Provenance = .device, metadata: [String: MetadataValue] = [:]
) -> Sample {
    let t = utc.startOfDay(day0 + DayNumber(d)).adding(seconds: Int64(h * 3600))
    return Sample(id: id, metric: metric, value: value, start: t, end: t, provenance: provenance, metadata: metadata)
}

/// The end of day `d` plus the default grace: when that day closes.
func close(_ d: Int) -> Timestamp { utc.startOfDay(day0 + DayNumber(d + 1)).adding(seconds: 3600) }

/// The outputs of `rules` fed one walking-speed sample a day (days 1, 2, …, in SI units), up to
/// the close of the last day.
func dailyOutputs(_ rules: String, _ values: [Double]) -> [EngineOutput] {
    var engine = Engine(program: program(rules))
    var out: [EngineOutput] = []
    for (i, v) in values.enumerated() { engine.ingest(sample("s\(i)", v, day: i + 1), user: "u", now: close(i + 1), into: &out) }
    engine.advance(to: close(values.count), into: &out)
    return out
}

extension Array where Element == EngineOutput {
    var alerts: [AlertTransition] { compactMap { if case .alert(let a) = $0 { return a } else { return nil } } }
    var series: [SeriesPoint] { compactMap { if case .series(let s) = $0 { return s } else { return nil } } }
    func series(_ name: String) -> [Int: Double?] {
        var out: [Int: Double?] = [:]
        for s in series where s.name == name { out[Int(s.day.dayNumber - day0)] = s.value }
        return out
    }
}
