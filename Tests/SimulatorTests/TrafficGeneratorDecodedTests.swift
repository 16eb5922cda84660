import MobilityModel
import MobilityWire
import Simulator
import Testing

/// The quality run's path (``TrafficGenerator/generateDecoded(day:templates:)``): every message
/// the same as the published traffic decoded by the wire decoder, without the JSON.
@Suite struct TrafficGeneratorDecodedTests {
    @Test(arguments: [(Population.Cohort.default, nil as Int?), (.wide, nil), (.wide, 1)])
    func everyMessageIsWhatTheDecoderGivesForItsJSON(cohort: Population.Cohort, samplesPerMessage: Int?) {
        var pop = Population(users: 60, days: 90, seed: 17, cohort: cohort)
        pop.samplesPerMessage = samplesPerMessage
        let decoder = WireDecoder()
        var templates = TrafficGenerator.SampleTemplates(decoder: decoder)
        var samples = 0, messages = 0, differing: [String] = []
        for i in 0..<pop.users {
            let g = pop.user(i).0
            for d in 1...pop.days {
                let published = g.generate(day: d), decoded = g.generateDecoded(day: d, templates: &templates)
                #expect(published.count == decoded.count)
                for (p, q) in zip(published, decoded) {
                    messages += 1
                    #expect(p.at == q.at)
                    switch q.message {
                    case .record(let r): #expect(r == p.record)
                    case .samples(let items):
                        #expect(p.record.topic.hasSuffix("/samples"))
                        let wire = decoder.samples(p.record.payload, user: g.persona.user)
                        if wire != items, differing.count < 3 {
                            differing.append("\(p.record.topic) day \(d): \(String(decoding: p.record.payload, as: UTF8.self))")
                        }
                        if case .success(let a) = items { samples += a.count }
                    }
                }
            }
        }
        #expect(differing.isEmpty, "\(differing)")
        #expect(samples > 50_000 && messages > 5_000, "\(samples) samples in \(messages) messages")
    }
}
