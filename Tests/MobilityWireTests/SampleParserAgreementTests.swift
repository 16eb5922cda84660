import MobilityModel
import MobilityWire
import TestSupport
import Testing

@Suite struct SampleParserAgreementTests {
    /// The samples path (simdjson) and the tree parser used for the other topics must agree on
    /// what is JSON: random documents from a JSON-ish alphabet, and mutations of a valid sample.
    @Test func simdjsonAndTreeParserAgreeOnValidity() {
        var rng = SplitMix64(seed: 7)
        let decoder = WireDecoder()
        let good = Array(
            #"[{"id":"s1","type":"walkingSpeed","value":1.25,"unit":"m/s","start":"2026-03-01T08:15:00Z","end":"2026-03-01T08:15:30Z","metadata":{"HKWasUserEntered":"0","n":[1,{"x":null}]}}]"#
                .utf8)
        let alphabet = Array(#"{}[]",:0123456789.eE+-tfnrulasx\ "#.utf8) + [0xC3, 0xFF, 0x80, 0x09, 0x0A]
        var checked = 0, valid = 0
        for round in 0..<6000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int.random(in: 0..<48, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }
            } else {
                bytes = good
                for _ in 0..<Int.random(in: 1...3, using: &rng) {
                    let at = Int.random(in: 0..<bytes.count, using: &rng)
                    switch Int.random(in: 0..<3, using: &rng) {
                    case 0: bytes[at] = alphabet.randomElement(using: &rng)!
                    case 1: bytes.remove(at: at)
                    default: bytes.insert(alphabet.randomElement(using: &rng)!, at: at)
                    }
                }
            }
            let treeOK = (try? JSONValue.parse(bytes).get()) != nil
            var simdOK = true
            if case .failure(let r) = decoder.samples(bytes, user: "u"), r.reason == .notJSON { simdOK = false }
            #expect(treeOK == simdOK, "disagree on \(String(decoding: bytes, as: UTF8.self))")
            checked += 1
            if treeOK { valid += 1 }
        }
        #expect(valid > 100 && checked - valid > 100)  // both outcomes are exercised
    }
}
