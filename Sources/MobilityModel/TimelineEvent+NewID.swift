extension TimelineEvent {
    /// The prefix of every id ``newID(using:)`` makes.
    package static let newIDPrefix = "entry-"

    /// The id of a new timeline entry whose author gives none (`mobilityctl event add`, the
    /// console's form): `entry-` and 16 random lower-case hex digits (64 bits), e.g.
    /// `entry-3f9a0c2e71b45d08`. It names neither the kind nor the day, which a correction may
    /// change. Ids are otherwise opaque: one given by its author, or made in another form
    /// earlier (`fall-3a9c`, `injury-2026-03-19-8badf00d`), is read and kept as it is.
    package static func newID(using generator: inout some RandomNumberGenerator) -> String {
        let digits = Array("0123456789abcdef".utf8)
        let value = generator.next()
        var out = Array(newIDPrefix.utf8)
        for shift in stride(from: 60, through: 0, by: -4) { out.append(digits[Int((value >> UInt64(shift)) & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// ``newID(using:)`` with the system's random generator.
    package static func newID() -> String {
        var g = SystemRandomNumberGenerator()
        return newID(using: &g)
    }
}
