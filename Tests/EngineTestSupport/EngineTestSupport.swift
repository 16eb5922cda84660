import MobilityModel
import RuleEngine
import RuleLanguage

/// A checked program of rules that must check.
package func program(_ text: String) -> Program {
    let r = Checker.check(text: text)
    guard let p = r.program else { fatalError("test rules do not check: \(r.diagnostics.map(\.message))") }
    return p
}

/// The calendar of the engine tests.
package let utc = LocalCalendar.utc
/// Day 0 of the engine tests.
package let day0 = CivilDate(year: 2026, month: 1, day: 1).dayNumber

/// A sample at hour `h` of day `d` (UTC) in SI units.
package func sample(
    _ id: String, _ value: Double, day d: Int, hour h: Int = 12, provenance: Provenance = .device,
    metadata: [String: MetadataValue] = [:]
) -> Sample {
    sample(id, .walkingSpeed, value, day: d, hour: h, provenance: provenance, metadata: metadata)
}

/// A sample of any metric.
package func sample(
    _ id: String, _ metric: MetricKind, _ value: Double, day d: Int, hour h: Int = 12,
    provenance: Provenance = .device, metadata: [String: MetadataValue] = [:]
) -> Sample {
    let t = utc.startOfDay(day0 + DayNumber(d)).adding(seconds: Int64(h * 3600))
    return Sample(id: id, metric: metric, value: value, start: t, end: t, provenance: provenance, metadata: metadata)
}

/// The end of day `d` plus the default grace: when that day closes.
package func close(_ d: Int) -> Timestamp { utc.startOfDay(day0 + DayNumber(d + 1)).adding(seconds: 3600) }

/// The outputs of `rules` fed one walking-speed sample a day (days 1, 2, …, in SI units), up to
/// the close of the last day.
package func dailyOutputs(_ rules: String, _ values: [Double]) -> [EngineOutput] {
    var engine = Engine(program: program(rules))
    var out: [EngineOutput] = []
    for (i, v) in values.enumerated() { engine.ingest(sample("s\(i)", v, day: i + 1), user: "u", now: close(i + 1), into: &out) }
    engine.advance(to: close(values.count), into: &out)
    return out
}

/// The outputs by kind.
extension Array where Element == EngineOutput {
    /// The alert transitions.
    package var alerts: [AlertTransition] { compactMap { if case .alert(let a) = $0 { return a } else { return nil } } }
    /// The series points.
    package var series: [SeriesPoint] { compactMap { if case .series(let s) = $0 { return s } else { return nil } } }
    /// A series' values by day (from day0).
    package func series(_ name: String) -> [Int: Double?] {
        var out: [Int: Double?] = [:]
        for s in series where s.name == name { out[Int(s.day.dayNumber - day0)] = s.value }
        return out
    }
}

/// Rules with series, a windowed alert, an inhibition and a sample alert: what the engine and
/// order-independence tests run.
package let engineTestRules = """
    series speed = p95(walkingSpeed, source: device)
    series n = count(walkingSpeed)
    series weekly = mean(speed, 7 d, min: 4)
    alert slow {
      let recent = weekly
      when recent < 1.0 m/s
      for 2 d
      summary "weekly {recent in m/s:.2f}"
      inhibited_by gap
    }
    alert gap {
      let missing = missing_days(n)
      when missing >= 3 d
    }
    alert capped {
      on sample sixMinuteWalkTestDistance where device_recorded
      let distance = value
      when value >= 500 m
    }
    """
