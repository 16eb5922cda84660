/// Which care teams a user belongs to, for checking that a team's command is about one of its
/// users. nil: no team known for the user (then the broker ACL on the team's command topic is the
/// only check).
protocol TeamDirectory: Sendable {
    /// The user's teams, nil when none is known.
    func knownTeams(of user: String) -> Set<String>?
}

/// The daemon's care teams (the operator's `--care-teams` file, else the profile's `careTeams`)
/// answer the acknowledgement desk's team check.
extension CareTeams: TeamDirectory {
    func knownTeams(of user: String) -> Set<String>? {
        let t = teams(of: user)
        return t.isEmpty ? nil : Set(t)
    }
}
