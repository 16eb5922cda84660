import MobilityModel

/// Scenarios built into the simulator (the seed's stories), until scenario files cover them.
package enum BuiltinScenario: String, CaseIterable, Sendable {
    /// Jamie's ankle sprain on day 31 with a normal recovery: no stall.
    case jamieNormal = "jamie-normal"
    /// The same injury, but recovery stops on day 50 well below the baseline: a stall.
    case jamiePlateau = "jamie-plateau"
    /// A heat wave during recovery slows walking while double support keeps improving: no stall.
    case jamieHeatWave = "jamie-heat-wave"

    /// The generator for this scenario.
    package func generator(user: String? = nil, seed: UInt64 = 1) -> TrafficGenerator {
        var p = Persona(user: user ?? rawValue)
        var t = Timeline()
        t.days = 90
        t.injuryDay = 31
        switch self {
        case .jamieNormal:
            break
        case .jamiePlateau:
            t.plateauDay = 50
            t.injuredDoubleSupport = 0.34
            t.doubleSupportPerDay = 0
        case .jamieHeatWave:
            t.heatWave = 55...66
            t.heatWaveFactor = 0.78
            t.recoveryPerDay = 0.010
        }
        p.samplesPerDay = 12...24
        return TrafficGenerator(persona: p, timeline: t, seed: seed)
    }
}

extension BuiltinScenario {
    /// The built-in story as a scenario (no expectations).
    package var scenario: Scenario {
        let g = generator()
        return Scenario(path: "builtin:" + rawValue, title: rawValue, persona: g.persona, timeline: g.timeline, seed: g.seed)
    }
}
