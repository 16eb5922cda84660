import MobilityModel
import TestSupport
import Testing

/// The byte writers of the replay and the simulator give exactly the bytes of the String ones.
@Suite struct UTF8WritingTests {
    @Test func seriesPointBytesAreItsJSON() {
        var rng = SplitMix64(seed: 18)
        let values: [Double?] = [nil, 0, -0.0, 1, -3, 1.25, 1e15, 1e16, -123_456.789_012_3, 0.000_000_4, .infinity, 1.234_567_5]
        for k in 0..<2000 {
            let v: Double? = k < values.count ? values[k] : Double(Int64(bitPattern: rng.next()) % 10_000_000) / 997
            let p = SeriesPoint(
                user: k % 3 == 0 ? "u\(k)" : "a\"b\\c\u{1}", name: "speed_7d", day: CivilDate(dayNumber: Int32(k * 37 - 30_000)), value: v,
                unit: k % 2 == 0 ? "m/s" : "%", revised: k % 5 == 0)
            var out: [UInt8] = []
            p.appendJSON(to: &out)
            #expect(String(decoding: out, as: UTF8.self) == p.json, "\(p)")
        }
    }

    @Test func iso8601BytesAreItsFormat() {
        var rng = SplitMix64(seed: 8601)
        for k in 0..<5000 {
            let ms = Int64(bitPattern: rng.next() % 8_000_000_000_000) - 2_000_000_000_000
            let t = Timestamp(milliseconds: k % 2 == 0 ? ms - ms % 1000 : ms)
            let offset = Int32(Int64(rng.next() % 100_000) - 50_000) / 60 * 60
            var out: [UInt8] = []
            ISO8601.append(t, offsetSeconds: k % 7 == 0 ? 0 : offset, to: &out)
            #expect(String(decoding: out, as: UTF8.self) == ISO8601.format(t, offsetSeconds: k % 7 == 0 ? 0 : offset))
        }
    }
}
