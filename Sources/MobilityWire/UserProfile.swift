import MobilityModel

/// A decoded `profile` message: the user's home calendar and the care teams the gateway names.
package struct UserProfile: Sendable {
    /// The home calendar (`timeZone`).
    package var calendar: LocalCalendar
    /// The care teams (`careTeams`; empty when absent), deduplicated in first-seen order.
    package var careTeams: [String]

    package init(calendar: LocalCalendar, careTeams: [String] = []) {
        self.calendar = calendar
        self.careTeams = careTeams
    }

    /// A user belongs to at most this many care teams.
    package static let maxCareTeams = 8

    /// Team ids are 1–64 characters of `a–z 0–9 - _`, safe in any topic and in an ACL line.
    package static func isValidTeam(_ s: some StringProtocol) -> Bool {
        let b = s.utf8
        guard !b.isEmpty, b.count <= 64 else { return false }
        return b.allSatisfy { c in (c >= 48 && c <= 57) || (c >= 97 && c <= 122) || c == 45 || c == 95 }
    }

    /// Checks a team list (the profile's `careTeams`, or a mapping file's): the teams, or why not.
    package static func checkTeams(_ teams: [String]) -> Result<[String], Rejection> {
        var out: [String] = []
        for t in teams {
            guard isValidTeam(t) else {
                return .failure(Rejection(.invalidTeam, "care team '\(t.prefix(64))' must be 1-64 characters of a-z 0-9 - _"))
            }
            if !out.contains(t) { out.append(t) }
        }
        guard out.count <= maxCareTeams else {
            return .failure(Rejection(.invalidTeam, "\(out.count) care teams, at most \(maxCareTeams) per user"))
        }
        return .success(out)
    }

    /// The `careTeams` member: absent or null is no team; else an array of team id strings.
    static func careTeams(_ v: JSONValue?) -> Result<[String], Rejection> {
        switch v {
        case nil, .null?: return .success([])
        case .array(let a)?:
            // Bound the work before looking at each element.
            guard a.count <= 4 * maxCareTeams else { return .failure(Rejection(.invalidTeam, "\(a.count) care teams, at most \(maxCareTeams) per user")) }
            var teams: [String] = []
            for x in a {
                guard case .string(let s) = x else { return .failure(Rejection(.invalidTeam, "'careTeams' must hold team id strings")) }
                teams.append(s)
            }
            return checkTeams(teams)
        default: return .failure(Rejection(.invalidTeam, "'careTeams' must be an array of team ids"))
        }
    }
}
