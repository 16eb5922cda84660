import TestSupport
import Testing

@testable import MobilityModel

/// The fixed-offset fast path and the date cache (`ISO8601+Fixed.swift`) against the general
/// parser: the same instant and offset for every string either accepts, the same rejections.
@Suite struct ISO8601FixedTests {
    private static func general(_ s: String) -> (Timestamp, offsetSeconds: Int32)? {
        var s = s
        return s.withUTF8 { ISO8601.parseGeneral(utf8: $0) }
    }

    private static func fixed(_ s: String, _ dates: inout ISO8601.DateCache) -> (Timestamp, offsetSeconds: Int32)? {
        var s = s
        return s.withUTF8 { ISO8601.parseFixed($0, dates: &dates) }
    }

    private static func viaCache(_ s: String, _ dates: inout ISO8601.DateCache) -> (Timestamp, offsetSeconds: Int32)? {
        var s = s
        return s.withUTF8 { ISO8601.parse(utf8: $0, dates: &dates) }
    }

    /// The forms on the wire take the fast path (so the agreement below tests it, not only the
    /// fallback), and give the instants the general parser gives.
    @Test(arguments: [
        "2026-03-01T08:15:00Z", "2026-03-01T08:15:00.250Z", "2026-03-01T00:15:00-08:00", "2026-03-01T09:15:00.999+01:00",
        "2024-02-29T23:59:60Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999-23:59", "2026-03-01T08:15:00-00:00"
    ])
    func commonFormsTakeTheFastPath(text: String) throws {
        var dates = ISO8601.DateCache()
        let fast = try #require(Self.fixed(text, &dates))
        let slow = try #require(Self.general(text))
        #expect(fast.0 == slow.0 && fast.offsetSeconds == slow.offsetSeconds)
    }

    /// Strings of the fast path's shape with a field out of range, and the other forms, are left
    /// to the general parser (which accepts some of them: `t`, `z`, `+0100`, two or four digits of
    /// fraction).
    @Test(arguments: [
        "2026-02-29T00:00:00Z", "2100-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-00-01T00:00:00Z", "2026-13-01T00:00:00Z",
        "2026-03-00T00:00:00Z", "2026-03-01T24:00:00Z", "2026-03-01T23:60:00Z", "2026-03-01T23:59:61Z", "2026-03-01T08:15:00+24:00",
        "2026-03-01T08:15:00+01:60", "2026-03-01t08:15:00Z", "2026-03-01T08:15:00z", "2026-03-01 08:15:00Z", "2026-03-01T08:15:00+0100",
        "2026-03-01T08:15:00.25Z", "2026-03-01T08:15:00.2500Z", "2026-03-01T08:15:00,250Z", "2026-03-01T08:15:00.250 Z", "+026-03-01T08:15:00Z",
        "2026-03-01T08:15:0aZ", "2026/03/01T08:15:00Z", "2026-03-01T08:15:00Zjunk", "2026-03-01T08:15:00.2a0Z"
    ])
    func otherStringsAreLeftToTheGeneralParser(text: String) {
        var dates = ISO8601.DateCache()
        #expect(Self.fixed(text, &dates) == nil)
        var again = ISO8601.DateCache()
        let both = Self.viaCache(text, &again), slow = Self.general(text)
        #expect(both?.0 == slow?.0 && both?.offsetSeconds == slow?.offsetSeconds)
    }

    /// Random timestamps in every form, then mutated (a byte replaced, dropped, doubled, garbage
    /// appended, a field pushed out of range), parsed in sequence through one cache (so a date
    /// cached from one string meets the next, valid or not) and alone by the general parser.
    @Test func agreesWithTheGeneralParserOnGeneratedStrings() {
        var rng = SplitMix64(seed: 18)
        var dates = ISO8601.DateCache()
        let alphabet = Array("0123456789-:T.Zz+ ,t\u{0}".utf8)
        var fast = 0, accepted = 0, rejected = 0
        for round in 0..<200_000 {
            // Dates around leap days and month ends of leap, common and century years.
            let year = [1900, 2000, 2023, 2024, 2026, 2100, 0, 9999, Int.random(in: 0...9999, using: &rng)].randomElement(using: &rng)!
            let month = Int.random(in: 0...13, using: &rng), day = [Int.random(in: 0...32, using: &rng), 28, 29, 30, 31].randomElement(using: &rng)!
            let hour = Int.random(in: 0...25, using: &rng), minute = Int.random(in: 0...61, using: &rng), second = Int.random(in: 0...61, using: &rng)
            func pad(_ v: Int, _ w: Int) -> String { String(repeating: "0", count: max(0, w - String(v).count)) + String(v) }
            var s = "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2))"
            let digits = Int.random(in: 0...5, using: &rng)
            if digits > 0 { s += "." + (0..<digits).map { _ in String(Int.random(in: 0...9, using: &rng)) }.joined() }
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: s += "Z"
            case 1:
                s += (Bool.random(using: &rng) ? "+" : "-") + pad(Int.random(in: 0...25, using: &rng), 2) + ":" + pad(Int.random(in: 0...61, using: &rng), 2)
            case 2: s += (Bool.random(using: &rng) ? "+" : "-") + pad(Int.random(in: 0...14, using: &rng), 2) + pad(Int.random(in: 0...59, using: &rng), 2)
            default: break  // no offset: always refused
            }
            var bytes = Array(s.utf8)
            if round % 3 == 0 {
                for _ in 0..<Int.random(in: 1...2, using: &rng) {
                    let at = Int.random(in: 0...bytes.count, using: &rng)
                    switch Int.random(in: 0..<4, using: &rng) {
                    case 0 where at < bytes.count: bytes[at] = alphabet.randomElement(using: &rng)!
                    case 1 where at < bytes.count: bytes.remove(at: at)
                    case 2: bytes.insert(alphabet.randomElement(using: &rng)!, at: at)
                    default: bytes += Array("x".utf8)
                    }
                }
            }
            let text = String(decoding: bytes, as: UTF8.self)
            var probe = dates
            if Self.fixed(text, &probe) != nil { fast += 1 }
            let got = Self.viaCache(text, &dates), want = Self.general(text)
            #expect(got?.0 == want?.0 && got?.offsetSeconds == want?.offsetSeconds, "round \(round): \(text)")
            if want == nil { rejected += 1 } else { accepted += 1 }
        }
        // Every kind of outcome is exercised often.
        #expect(fast > 10_000 && accepted - fast > 5_000 && rejected > 50_000, "fast \(fast) accepted \(accepted) rejected \(rejected)")
    }

    /// A cache hit is only a same-date hit: timestamps alternating between dates that differ in
    /// one byte of the date (the year's first digit, the day's last) each get their own day.
    @Test func cacheKeysOnEveryByteOfTheDate() throws {
        var dates = ISO8601.DateCache()
        let texts = [
            "2026-03-01T12:00:00Z", "2026-03-02T12:00:00Z", "1026-03-02T12:00:00Z", "2026-03-01T12:00:00+01:00", "2026-02-01T12:00:00Z", "1970-01-01T00:00:00Z"
        ]
        for _ in 0..<3 {
            for text in texts {
                let got = try #require(Self.viaCache(text, &dates)), want = try #require(Self.general(text))
                #expect(got.0 == want.0, "\(text)")
            }
        }
        // The fresh cache's entry (1970-01-01) is a real date, not a sentinel a string could match.
        var fresh = ISO8601.DateCache()
        #expect(Self.viaCache("1970-01-01T00:00:01Z", &fresh)?.0.milliseconds == 1000)
        var zeros = ISO8601.DateCache()
        #expect(Self.viaCache("\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}T00:00:00Z", &zeros) == nil)
    }
}
