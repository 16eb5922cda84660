import MobilityWire
import Synchronization

/// Which care teams each user belongs to — the one place to ask (`teams(of:)`), for the team
/// topics and for anything that checks a member of staff's team against a user.
///
/// Two sources, and the operator's wins: a user listed in the mapping file (`--care-teams`) has
/// exactly the teams listed there, whatever the user's profile says; any other user has the
/// teams their retained profile names (`careTeams`). A gateway publishes its user's profile, so
/// without the file a gateway decides its user's teams; with the file it cannot move a listed
/// user into another team's view (or out of one). The file is read at start.
///
/// Sendability: `assigned` is immutable; the profile teams are in a Mutex. Each user's profile
/// teams are written only by the user's shard; any thread may read.
package final class CareTeams: Sendable {
    /// The operator's mapping: user → teams (validated, deduplicated).
    package let assigned: [String: [String]]
    private let claimed = Mutex<[String: [String]]>([:])
    /// Bumped each time a profile changes its user's teams (``teamNames()`` may have changed).
    private let changes = Atomic<Int>(0)

    /// Creates the teams with the operator's mapping (empty: every user's profile decides).
    package init(assigned: [String: [String]] = [:]) { self.assigned = assigned }

    /// The user's care teams: the mapping file's if it lists the user, else the profile's (often none).
    package func teams(of user: String) -> [String] {
        if let a = assigned[user] { return a }
        return claimed.withLock { $0[user] ?? [] }
    }

    /// Whether the mapping file or a profile seen since the start names `team` (a silence for a
    /// team nobody belongs to is refused as `unknown_team`).
    func knows(team: String) -> Bool {
        if assigned.values.contains(where: { $0.contains(team) }) { return true }
        return claimed.withLock { $0.values.contains { $0.contains(team) } }
    }

    /// Every team the mapping file or a profile seen since the start names.
    package func teamNames() -> Set<String> {
        var names = Set(assigned.values.joined())
        claimed.withLock { for t in $0.values.joined() { names.insert(t) } }
        return names
    }

    /// The users of any of `teams` (the mapping file's and the profiles'), sorted.
    package func users(inAny teams: [String]) -> [String] {
        var users = Set(assigned.filter { $0.value.contains(where: teams.contains) }.keys)
        claimed.withLock { c in
            for (u, t) in c where assigned[u] == nil && t.contains(where: teams.contains) { users.insert(u) }
        }
        return users.sorted()
    }

    /// Changes ``teamNames()`` may have seen: equal counts, the same names.
    package var version: Int { changes.load(ordering: .acquiring) }

    /// Whether `team` is one of the user's care teams.
    package func user(_ user: String, belongsTo team: String) -> Bool { teams(of: user).contains(team) }

    /// Records the teams a user's accepted profile names; returns the user's effective teams
    /// before and after (equal when the mapping file lists the user, or nothing changed).
    @discardableResult
    package func setProfileTeams(_ teams: [String], of user: String) -> (before: [String], after: [String]) {
        let before = claimed.withLock { c in
            let old = c[user] ?? []
            if teams.isEmpty { c.removeValue(forKey: user) } else { c[user] = teams }
            if old != teams { changes.add(1, ordering: .releasing) }
            return old
        }
        if let a = assigned[user] { return (a, a) }
        return (before, teams)
    }

    /// A line of a mapping file that is not `USER TEAM[,TEAM…]`.
    package struct FileError: Error, CustomStringConvertible {
        /// The 1-based line.
        package var line: Int
        /// What is wrong, lower case.
        package var message: String
        /// The line and the problem, `line: message`.
        package var description: String { "\(line): \(message)" }
    }

    /// Parses a mapping file: `USER TEAM[,TEAM…]` lines, `#` comments and blank lines ignored, a
    /// user at most once. Every bad line is reported (the file is good when `errors` is empty).
    package static func parse(_ text: String) -> (assigned: [String: [String]], errors: [FileError]) {
        var map: [String: [String]] = [:], errors: [FileError] = []
        for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            if words.isEmpty { continue }
            func fail(_ m: String) { errors.append(FileError(line: n + 1, message: m)) }
            guard words.count == 2 else { fail("expected USER TEAM[,TEAM...], got \(words.count) fields"); continue }
            let user = String(words[0])
            guard TopicLayout.isValidUser(user) else { fail("user '\(user.prefix(64))' must be 1-64 characters of A-Z a-z 0-9 _ -"); continue }
            guard map[user] == nil else { fail("user '\(user)' is listed twice"); continue }
            switch UserProfile.checkTeams(words[1].split(separator: ",", omittingEmptySubsequences: false).map(String.init)) {
            case .failure(let r): fail(r.detail)
            case .success(let teams): map[user] = teams
            }
        }
        return (map, errors)
    }
}
