import MobilityModel
import TestSupport
import Testing

/// Compact JSON text: the writer the daemon publishes with, and a value's `text`.
@Suite struct JSONWriterTests {
    @Test func writesMembersInOrderWithCommasAndEscapes() {
        var w = JSONWriter()
        w.beginObject()
        w.string("s", "a\"b\\c\n\u{1}é")
        w.number("x", 2.5)
        w.number("big", 1e21)
        w.number("nan", .nan)
        w.int("i", -7)
        w.bool("t", true)
        w.null("n")
        w.beginArray("a")
        w.number(nil, 1)
        w.string(nil, "z")
        w.endArray()
        w.beginObject("o")
        w.endObject()
        w.endObject()
        #expect(w.text == #"{"s":"a\"b\\c\n\u0001é","x":2.5,"big":1e+21,"nan":null,"i":-7,"t":true,"n":null,"a":[1,"z"],"o":{}}"#)
    }

    @Test(arguments: [(0.0, "0"), (3.0, "3"), (-0.5, "-0.5"), (0.1, "0.1"), (1.0 / 3, "0.3333333333333333")] as [(Double, String)])
    func formatsTheShortestRoundTrippingText(_ v: Double, _ text: String) {
        #expect(JSONWriter.format(v) == text)
        #expect(Double(JSONWriter.format(v)) == v)
    }

    @Test func roundTripsStrings() throws {
        let v = try JSONValue.parse(#"{"a":"line\nbreak \u00e9 \ud83d\ude00 \"q\"","b":[1,2.5,-3e2,true,null]}"#).get()
        #expect(v["a"] == .string("line\nbreak é 😀 \"q\""))
        #expect(try JSONValue.parse(v.text).get() == v)
    }

    @Test func overflowingNumbersRoundTrip() throws {
        // Found by the decoder fuzzer: 9999929999995e999 overflows to infinity and used to be written as null.
        let v = try JSONValue.parse("[9999929999995e999,-1e400]").get()
        #expect(try JSONValue.parse(v.text).get() == v)
    }
}

/// The byte writer against the `String` writer it replaced: the same bytes for any sequence of
/// members (escapes, non-ASCII, every number edge), so every payload written with it (weekly
/// digests, alerts, series) is unchanged.
@Suite struct JSONWriterBytesTests {
    static let strings = ["", "jamie", "é 😀 ü", "a\"b", "back\\slash", "line\nbreak\r\t", "\u{1}\u{1f}", "speed_p95", "m/s", "%", "日本"]
    static let numbers: [Double] = [
        0, -0.0, 1, -1, 2.5, 1.0 / 3, 1e-7, 123_456.789, 999_999_999_999_999, 1e15, -1e15, 1e21, 9_007_199_254_740_992, .nan, .infinity,
        -.infinity, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 0.1 + 0.2
    ]
    static let ints: [Int64] = [0, -7, 42, 999_999_999_999_999, 1_000_000_000_000_000, -1_000_000_000_000_000, .max, .min]

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func randomMemberSequencesGiveTheStringWritersBytes(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var w = JSONWriter(), old = LegacyJSONWriter()
        var depth = 0, inArray: [Bool] = [false]
        w.beginObject()
        old.beginObject()
        for _ in 0..<400 {
            let key: String? = inArray.last! ? nil : Self.strings.randomElement(using: &rng)!
            switch rng.next() % 9 {
            case 0 where depth < 12:
                w.beginObject(key)
                old.beginObject(key)
                depth += 1
                inArray.append(false)
            case 1 where depth < 12:
                w.beginArray(key)
                old.beginArray(key)
                depth += 1
                inArray.append(true)
            case 2 where depth > 0:
                if inArray.removeLast() { w.endArray(); old.endArray() } else { w.endObject(); old.endObject() }
                depth -= 1
            case 3:
                let s = Self.strings.randomElement(using: &rng)!
                w.string(key, s)
                old.string(key, s)
            case 4:
                let i = Self.ints.randomElement(using: &rng)!
                w.int(key, i)
                old.int(key, i)
            case 5:
                let b = rng.next() % 2 == 0
                w.bool(key, b)
                old.bool(key, b)
            case 6:
                w.null(key)
                old.null(key)
            default:
                var x = Self.numbers.randomElement(using: &rng)!
                if rng.next() % 2 == 0 { x = Double(Int64(bitPattern: rng.next()) % 10_000_000) / 1e6 * (rng.next() % 2 == 0 ? 1 : 1e12) }
                w.number(key, x)
                old.number(key, x)
            }
        }
        while depth > 0 {
            if inArray.removeLast() { w.endArray(); old.endArray() } else { w.endObject(); old.endObject() }
            depth -= 1
        }
        w.endObject()
        old.endObject()
        #expect(w.bytes == Array(old.text.utf8), "seed \(seed)")
        #expect(w.text == old.text, "seed \(seed)")
    }
}
