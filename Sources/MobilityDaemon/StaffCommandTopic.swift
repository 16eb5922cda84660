import MobilityWire

/// Where a care-staff command arrived: `{root}/teams/{team}/commands/{kind}` (a team account's
/// topic: the payload says who acts) or `{root}/teams/{team}/commands/{kind}/{login}` (a person's
/// topic: the broker's ACL lets only that login write it, so the login is who acts).
struct StaffCommandTopic: Equatable {
    /// The team segment; nil when it is not a valid id (1-64 of A-Z a-z 0-9 _ -).
    var team: String?
    /// The login segment of a person's topic; nil on a team account's topic.
    var login: String?

    /// Whether a login segment is a valid login: 1-64 of A-Z a-z 0-9 . _ - @.
    static func isValidLogin(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.count <= 64
            && s.utf8.allSatisfy { c in
                (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 46 || c == 95 || c == 45 || c == 64
            }
    }

    /// The refusal message for a login segment that is not a valid login.
    static let invalidLoginMessage = "the login in the topic is 1-64 of A-Z a-z 0-9 . _ - @"

    /// Parses `topic` as a `kind` command topic under `prefix` (`{root}/teams/`); nil for any other topic.
    static func parse(_ topic: String, prefix: String, kind: String) -> StaffCommandTopic? {
        guard topic.hasPrefix(prefix) else { return nil }
        let levels = topic.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard levels.count >= 3, levels[1] == "commands", levels[2] == kind else { return nil }
        let team = String(levels[0])
        // Everything after the kind is the login: a deeper topic carries a '/' in it, which no
        // login has, so the desk refuses it as an invalid login instead of it passing as an input.
        let login = levels.count > 3 ? levels[3...].joined(separator: "/") : nil
        return StaffCommandTopic(team: TopicLayout.isValidUser(team) ? team : nil, login: login)
    }

    /// Who acts: the login of a person's topic (a payload naming someone else is refused), else
    /// the payload's claim; an error message when the two differ.
    static func actor(login: String?, claimed: String?) -> Result<String?, StaffCommandTopic.Mismatch> {
        guard let login else { return .success(claimed) }
        if let claimed, claimed != login { return .failure(Mismatch(login: login)) }
        return .success(login)
    }

    /// A payload naming someone other than the login its topic carries.
    struct Mismatch: Error {
        /// The login of the topic.
        var login: String
        /// The refusal message.
        var message: String { "the command was sent as \(login): 'by' may only name that login (or be left out)" }
    }
}
