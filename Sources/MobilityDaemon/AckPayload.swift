import MobilityModel

/// The payload of a commit acknowledgement, `{"user":"…","lastId":"…"}` (docs/mqtt-api.md),
/// written as bytes: the same bytes as a `JSONWriter` object of the two strings, without building
/// a `String` per acknowledgement (one per user per `--ack-interval`).
enum AckPayload {
    /// The acknowledgement of `user`'s samples through `lastID`.
    static func bytes(user: String, lastID: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(23 + user.utf8.count + lastID.utf8.count)
        out += #"{"user":"#.utf8
        quote(user, into: &out)
        out += #","lastId":"#.utf8
        quote(lastID, into: &out)
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// A JSON string literal: the bytes as they are when nothing needs escaping, else `JSONWriter.quote`'s.
    private static func quote(_ s: String, into out: inout [UInt8]) {
        if s.utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) {
            var q = ""
            JSONWriter.quote(s, into: &q)
            out += q.utf8
            return
        }
        out.append(UInt8(ascii: "\""))
        out += s.utf8
        out.append(UInt8(ascii: "\""))
    }
}
