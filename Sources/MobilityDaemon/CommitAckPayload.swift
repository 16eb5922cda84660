import MobilityModel

/// The payload of a commit acknowledgement, `{"user":"…","lastId":"…"}` (docs/mqtt-api.md),
/// written as bytes: the same bytes as a `JSONWriter` object of the two strings, without building
/// a `String` per acknowledgement (one per user per `--ack-interval`).
enum CommitAckPayload {
    /// The acknowledgement of `user`'s samples through `lastID`.
    static func bytes(user: String, lastID: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(23 + user.utf8.count + lastID.utf8.count)
        out += #"{"user":"#.utf8
        JSONWriter.quote(user, into: &out)
        out += #","lastId":"#.utf8
        JSONWriter.quote(lastID, into: &out)
        out.append(UInt8(ascii: "}"))
        return out
    }
}
