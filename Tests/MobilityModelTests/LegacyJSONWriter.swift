import MobilityModel

/// The `String`-appending `JSONWriter` as it was before it wrote bytes (appends cost ~3.5× the
/// instructions), kept verbatim as the reference the byte writer must match byte for byte.
struct LegacyJSONWriter {
    private(set) var text = ""
    private var needsComma = [false]

    init() { text.reserveCapacity(256) }

    private mutating func comma() {
        if needsComma[needsComma.count - 1] { text += "," }
        needsComma[needsComma.count - 1] = true
    }

    mutating func beginObject(_ key: String? = nil) { if let key { self.key(key) } else { comma() }; text += "{"; needsComma.append(false) }
    mutating func endObject() { text += "}"; needsComma.removeLast() }
    mutating func beginArray(_ key: String? = nil) { if let key { self.key(key) } else { comma() }; text += "["; needsComma.append(false) }
    mutating func endArray() { text += "]"; needsComma.removeLast() }
    private mutating func key(_ k: String) { comma(); JSONWriter.quote(k, into: &text); text += ":" }
    mutating func string(_ key: String?, _ v: String) { if let key { self.key(key) } else { comma() }; JSONWriter.quote(v, into: &text) }
    mutating func number(_ key: String?, _ v: Double) {
        if let key { self.key(key) } else { comma() }
        text += JSONWriter.format(v)
    }
    mutating func int(_ key: String?, _ v: Int64) { if let key { self.key(key) } else { comma() }; text += String(v) }
    mutating func bool(_ key: String?, _ v: Bool) { if let key { self.key(key) } else { comma() }; text += v ? "true" : "false" }
    mutating func null(_ key: String?) { if let key { self.key(key) } else { comma() }; text += "null" }
}

extension DailySeries {
    /// ``json`` as it was written before ``appendJSON(to:)``: through the `String` writer.
    var legacyJSON: String {
        var w = LegacyJSONWriter()
        w.beginObject()
        w.string("user", user)
        w.string("day", day.description)
        if revised { w.bool("revised", true) }
        w.beginObject("series")
        for v in values {
            w.beginObject(v.name)
            if let x = v.value { w.number("value", (x * 1e6).rounded() / 1e6) } else { w.null("value") }
            w.string("unit", v.unit)
            w.endObject()
        }
        w.endObject()
        w.endObject()
        return w.text
    }
}
