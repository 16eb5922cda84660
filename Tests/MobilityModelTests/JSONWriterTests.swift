import MobilityModel
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
