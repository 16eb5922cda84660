/// The care-team mapping file (`--care-teams FILE`): read and checked at load, so a bad file is a
/// configuration error (exit 2) before anything starts. Like the other files naming people's
/// care, it must not be accessible to group or others (mode 0600 or 0400): whoever can write it
/// moves users between teams' views, and which team treats a user is health data.
extension DaemonConfiguration {
    static let careTeamOptions: [Option] = [
        Option(name: "care-teams", value: "FILE", help: "USER TEAM[,TEAM...] lines (mode 0600 or 0400); a listed user's teams are these, not the profile's")
    ]

    mutating func applyCareTeams(_ m: [String: String]) throws(Problem) {
        guard let path = m["care-teams"] else { return }
        let (text, mode) = try Self.readPrivate(path, what: "care teams file")
        if mode & 0o077 != 0 { throw Problem(description: Self.looseFile(path, mode: mode, what: "care teams file", holds: "users' care teams")) }
        let (map, errors) = CareTeams.parse(text)
        guard errors.isEmpty else { throw Problem(description: errors.map { "\(path):\($0)" }.joined(separator: "\n")) }
        careTeams = map
    }
}
