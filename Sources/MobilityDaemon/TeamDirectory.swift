import MobilityModel
import Synchronization

/// Which care teams a user belongs to, for checking that a team's command is about one of its
/// users. nil: not known (then the broker ACL on the team's command topic is the only check).
protocol TeamDirectory: Sendable {
    /// The user's teams, nil when unknown.
    func teams(of user: String) -> Set<String>?
}

/// The default directory until the operator-owned team mapping lands (issue 17, Teams): the
/// `careTeams` array of each user's profile as the daemon has seen it since it started (in
/// memory only; after a restart a user's teams are unknown until the profile is sent again).
final class ProfileCareTeams: TeamDirectory {
    private let known = Mutex<[String: Set<String>]>([:])

    func teams(of user: String) -> Set<String>? { known.withLock { $0[user] } }

    /// Records the `careTeams` of a profile payload (absent or not an array of strings: unknown).
    func profileSeen(user: String, payload: [UInt8]) {
        var teams: Set<String>?
        if case .success(let v) = JSONValue.parse(payload), case .array(let a)? = v["careTeams"] {
            teams = Set(a.compactMap { if case .string(let s) = $0 { s } else { nil } })
        }
        known.withLock { $0[user] = teams }
    }
}
