import MobilityModel
import Testing

@testable import MobilityDaemon

/// The commit acknowledgement's payload, written as bytes, is byte for byte what `JSONWriter` writes.
struct CommitAckPayloadTests {
    static func viaWriter(_ user: String, _ id: String) -> [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.string("user", user)
        w.string("lastId", id)
        w.endObject()
        return Array(w.text.utf8)
    }

    @Test(arguments: [
        ("jamie", "6B1F3C2A-0D1E-4C55-9F00-1A2B3C4D5E6F"), ("b1", ""), ("u", "quote\"d"), ("u", "back\\slash"),
        ("u", "new\nline\ttab\r"), ("u", "ctl\u{01}\u{1F}"), ("ü-user", "日本語-id"), ("u", "emoji-🦶"), ("u", "/slash/")
    ])
    func sameBytesAsTheJSONWriter(user: String, id: String) throws {
        let bytes = CommitAckPayload.bytes(user: user, lastID: id)
        #expect(bytes == Self.viaWriter(user, id))
        let parsed = try JSONValue.parse(bytes).get()
        #expect(parsed["user"] == .string(user))
        #expect(parsed["lastId"] == .string(id))
    }
}
