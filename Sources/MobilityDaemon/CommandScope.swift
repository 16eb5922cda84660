import struct StateStore.PartitionSet

/// Which care-staff commands this run of the daemon answers.
///
/// One instance answers every command. In partitioned mode (`--partitions`) every instance is
/// subscribed to every team's command topics and exactly one answers each, the others leave it
/// without a word: an acknowledgement is answered by the owner of its user's partition (the
/// user's shard checks it against its engine), a silence command — and any command that names no
/// readable user (a malformed one, a bad team segment) — by the *decider* of its team, the owner of
/// the partition the team id falls in (``PartitionSet/partition(of:)``, the users' function).
/// While a partition changes hands nobody owns it: its commands are answered by nobody, and the
/// sender's `mobilityctl` times out and can send again.
struct CommandScope: Sendable {
    /// The partitions this run owns; nil: every user and team is this run's.
    let partitions: PartitionSet?

    /// One instance: answers everything.
    static let everything = CommandScope(partitions: nil)

    /// The refusal of a command published retained (`retained_input`), whatever its kind.
    static let retainedMessage =
        "a command must not be retained: the broker would deliver it again on every reconnect; publish it with retain off and clear the retained message"

    /// Whether other instances share the commands (partitioned mode).
    var isPartitioned: Bool { partitions != nil }

    /// Whether `user`'s acknowledgements are this run's (it owns the user's partition).
    func owns(user: String) -> Bool {
        guard let p = partitions else { return true }
        return p.owned.contains(p.partition(of: user))
    }

    /// Whether this run publishes `topic`, an output committed and not yet delivered (the
    /// outbox, at the run's start), so that each is published by the instance that would make
    /// it now: one about a user — `{root}/users/{user}/…`, `{root}/teams/{team}/users/{user}/…`,
    /// `{root}/fhir/users/{user}/…` — by the owner of the user's partition; a team's silences
    /// (`{root}/teams/{team}/silences…`, retained state) by the team's decider, so that no other
    /// run puts an older state back over the decider's; any other (the audit, a command's
    /// refusal: records, where a copy is harmless) by every run, as the run that committed it
    /// (the owner of a user an acknowledgement was about, say) may not start again soon.
    func publishes(output topic: String, root: String) -> Bool {
        guard partitions != nil, topic.hasPrefix(root + "/") else { return true }
        let s = topic.dropFirst(root.utf8.count + 1).split(separator: "/", maxSplits: 5, omittingEmptySubsequences: false)
        if s.count > 1, s[0] == "users" { return owns(user: String(s[1])) }
        if s.count > 2, s[0] == "fhir", s[1] == "users" { return owns(user: String(s[2])) }
        if s.count > 3, s[0] == "teams", s[2] == "users" { return owns(user: String(s[3])) }
        if s.count > 2, s[0] == "teams", s[2] == "silences" { return decides(team: String(s[1])) }
        return true
    }

    /// Whether this run decides `team`'s silences and answers its unattributable commands; `nil`:
    /// a command topic whose team segment is not an id (decided by partition 0's owner).
    func decides(team: String?) -> Bool {
        guard let p = partitions else { return true }
        return p.owned.contains(team.map { p.partition(of: $0) } ?? 0)
    }
}
