import MobilityModel
import MobilityWire
import StateStore

/// A shard's copies of its users' alerts and weekly reports under each of the user's care teams
/// (`{root}/teams/{team}/users/{u}/…`, so that a broker ACL can give staff exactly their teams),
/// and what a change of a user's teams publishes: empty retained messages under the teams left,
/// the firing alerts and the latest weekly report under the teams joined.
///
/// Owned by one shard's thread. The team lists come from ``CareTeams`` (computed when a profile
/// changes them, one lookup per alert or report here); series points have no team copies.
struct TeamOutputs {
    let careTeams: CareTeams
    let layout: TopicLayout
    /// The retained payload of each firing alert per user (user → rule → JSON), to publish under a
    /// team the user joins. Only what fired since this start: see docs/operations.md.
    private var firing: [String: [String: [UInt8]]] = [:]

    /// Creates the team outputs of a shard.
    init(careTeams: CareTeams, layout: TopicLayout) {
        self.careTeams = careTeams
        self.layout = layout
    }

    /// The team copies of an alert transition's user-topic items (same payloads, same retain
    /// flags: retained while firing, cleared after resolving), and notes what is firing.
    mutating func alertItems(_ a: AlertTransition, userItems: [StateStore.OutboxItem]) -> [StateStore.OutboxItem] {
        if a.status == .firing, let p = userItems.first?.payload {
            firing[a.user, default: [:]][a.rule] = p
        } else if firing[a.user]?.removeValue(forKey: a.rule) != nil, firing[a.user]?.isEmpty == true {
            firing.removeValue(forKey: a.user)
        }
        let teams = careTeams.teams(of: a.user)
        guard !teams.isEmpty else { return [] }
        var out: [StateStore.OutboxItem] = []
        out.reserveCapacity(teams.count * userItems.count)
        for t in teams {
            let topic = layout.teamAlert(t, user: a.user, rule: a.rule)
            for i in userItems { out.append(.init(topic: topic, payload: i.payload, retain: i.retain)) }
        }
        return out
    }

    /// The team copies of a user's weekly report under `teams` (retained): what ``ReportWorker``
    /// publishes with the teams the shard handed over.
    static func reportItems(teams: [String], user: String, payload: [UInt8], layout: TopicLayout) -> [StateStore.OutboxItem] {
        teams.map { .init(topic: layout.teamWeeklyReport($0, user: user), payload: payload, retain: true) }
    }

    /// Records the teams of a user's accepted profile and returns what the change publishes:
    /// under each team left, an empty retained message on every rule's alert topic (also those
    /// that fired before this start) and on the weekly report; under each team joined, the
    /// firing alerts and the latest report (`latestReport`, read only when a team was joined).
    mutating func profileTeams(
        _ teams: [String], user: String, rules: [String],
        latestReport: () -> [UInt8]?
    ) -> [StateStore.OutboxItem] {
        let (before, after) = careTeams.setProfileTeams(teams, of: user)
        let left = before.filter { !after.contains($0) }, joined = after.filter { !before.contains($0) }
        var out: [StateStore.OutboxItem] = []
        for t in left {
            var cleared = Set<String>()
            for r in rules + (firing[user].map { Array($0.keys) } ?? []) where cleared.insert(r).inserted {
                out.append(.init(topic: layout.teamAlert(t, user: user, rule: r), payload: [], retain: true))
            }
            out.append(.init(topic: layout.teamWeeklyReport(t, user: user), payload: [], retain: true))
        }
        if !joined.isEmpty {
            let report = latestReport()
            for t in joined {
                for (r, p) in (firing[user] ?? [:]).sorted(by: { $0.key < $1.key }) {
                    out.append(.init(topic: layout.teamAlert(t, user: user, rule: r), payload: p, retain: true))
                }
                if let report { out.append(.init(topic: layout.teamWeeklyReport(t, user: user), payload: report, retain: true)) }
            }
        }
        return out
    }
}

extension TopicLayout {
    /// `{root}/teams/{team}/users/{user}/alerts/{rule}`: the user's alert, for the user's care team.
    func teamAlert(_ team: String, user: String, rule: String) -> String { "\(root)/teams/\(team)/users/\(user)/alerts/\(rule)" }
    /// The audit trail (every care-staff action).
    var audit: String { "\(root)/audit" }
    /// A team's copy of the audit trail: the actions taken on its command topics (or by its token).
    func teamAudit(_ team: String) -> String { "\(root)/teams/\(team)/audit" }
    /// `{root}/teams/{team}/users/{user}/reports/weekly`: the user's weekly report, for the user's care team.
    func teamWeeklyReport(_ team: String, user: String) -> String { "\(root)/teams/\(team)/users/\(user)/reports/weekly" }
}
