import MobilityModel

/// What a whole cohort's export needs besides each user's history: the series the history holds
/// and the care teams each user's profile named.
extension StateStore {
    /// The series the history holds, in the order they were first recorded (the rules' order at
    /// the first day close; a series added by a later rule set comes after), with the unit its
    /// values are stored in.
    package func historySeries() throws -> [(name: String, unit: String)] {
        var series: [(String, String)] = []
        try reading { db in
            let q = try db.prepare("SELECT name, unit FROM history_series ORDER BY id")
            while try q.step() { series.append((q.text(0), q.text(1))) }
        }
        return series
    }

    /// The care teams each stored user's last accepted profile named (users without a profile, or
    /// whose profile named none, are left out). Only the head of each state is decoded.
    package func profileTeams() throws -> [String: [String]] {
        var teams: [String: [String]] = [:]
        try reading { db in
            let q = try db.prepare("SELECT user, state FROM users WHERE state IS NOT NULL")
            while try q.step() {
                let user = q.text(0)
                let named: [String]
                do { named = try UserStateCodec.careTeams(q.blob(1)) } catch { throw UserStateCodec.decodingError(error, user: user) }
                if !named.isEmpty { teams[user] = named }
            }
        }
        return teams
    }
}

extension UserStateCodec {
    /// The care teams in a stored state's head, without decoding the rest (every blob format
    /// starts with the same head, after a format marker from v2 on).
    static func careTeams(_ bytes: [UInt8]) throws -> [String] {
        var r = Reader(b: bytes)
        let first = try r.i32()
        if first != v2Marker && first != v3Marker { r = Reader(b: bytes) }
        return try decodeHead(user: "", &r).careTeams
    }
}
