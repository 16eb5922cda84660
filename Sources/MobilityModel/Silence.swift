/// A silence, as Alertmanager's: for a time (`startsAt` ..< `endsAt`), transitions of alerts
/// that every matcher accepts are not delivered as notifications (they are still evaluated,
/// recorded and marked `silencedBy`). Created through one care team's command topic, a silence
/// only ever applies to users of that team.
package struct Silence: Hashable, Sendable {
    /// Daemon-assigned, stable: ``makeID(team:matchers:startsAt:endsAt:createdBy:comment:)``.
    package var id: String
    /// The team whose command topic created it; it applies to that team's users only.
    package var team: String
    /// All must match (at least one, and at least one that does not match `""`).
    package var matchers: [SilenceMatcher]
    /// From when it applies (inclusive).
    package var startsAt: Timestamp
    /// Until when (exclusive); expiring a silence early sets it to now.
    package var endsAt: Timestamp
    /// Who created it (what the command says; the broker's ACL decides who may send it).
    package var createdBy: String
    /// Why (required, as amtool requires it by default).
    package var comment: String

    /// At most this many matchers.
    package static let maxMatchers = 8
    /// A matcher value (or regular expression) of at most this many UTF-8 bytes.
    package static let maxValueBytes = LabelPattern.maxBytes
    /// A comment of at most this many UTF-8 bytes.
    package static let maxCommentBytes = 500
    /// A `createdBy` of at most this many UTF-8 bytes.
    package static let maxCreatedByBytes = 100
    /// At most this many pending or active silences per team.
    package static let maxPerTeam = 100
    /// A silence lasts at most this long (a forgotten silence must not hide a patient for good).
    package static let maxDurationSeconds: Int64 = 90 * 86_400

    package init(
        id: String, team: String, matchers: [SilenceMatcher], startsAt: Timestamp, endsAt: Timestamp, createdBy: String, comment: String
    ) {
        self.id = id
        self.team = team
        self.matchers = matchers
        self.startsAt = startsAt
        self.endsAt = endsAt
        self.createdBy = createdBy
        self.comment = comment
    }

    /// Alertmanager's states.
    package enum State: String, Hashable, Sendable {
        case pending, active, expired
    }

    /// The state at `now`.
    package func state(at now: Timestamp) -> State {
        now < startsAt ? .pending : now < endsAt ? .active : .expired
    }

    /// Whether every matcher accepts the alert (`labels` sorted or not; absent labels are `""`).
    /// Does not look at the time or the team.
    package func matches(user: String, rule: String, severity: Severity, labels: [(String, String)]) -> Bool {
        for m in matchers {
            let v: String
            switch m.name {
            case "user": v = user
            case "rule": v = rule
            case "severity": v = severity.rawValue
            default: v = labels.first { $0.0 == m.name }?.1 ?? ""
            }
            if !m.matches(v) { return false }
        }
        return true
    }

    /// Names a matcher may always use, whatever the rules' labels.
    package static let builtInNames: Set<String> = ["user", "rule", "severity"]

    /// Why a silence cannot be taken; `reason` is a stable lower-case code.
    package struct Problem: Error, Hashable, Sendable {
        /// The stable code (`ends_before_starts`, `unknown_label`, …).
        package var reason: String
        /// What is wrong, for a person.
        package var message: String
        package init(_ reason: String, _ message: String) {
            self.reason = reason
            self.message = message
        }
    }

    /// Checks the silence's bounds: matchers (count, names known to `labelNames` or built in,
    /// one not matching `""`), times (`endsAt` after `startsAt`, not in the past at `now`, at
    /// most ``maxDurationSeconds``), `createdBy` and `comment`. The first problem found.
    package func validate(labelNames: Set<String>, now: Timestamp) -> Problem? {
        if matchers.isEmpty { return Problem("invalid_matcher", "a silence needs at least one matcher") }
        if matchers.count > Silence.maxMatchers {
            return Problem("too_many_matchers", "a silence has at most \(Silence.maxMatchers) matchers, got \(matchers.count)")
        }
        for m in matchers {
            guard SilenceMatcher.isValidName(m.name) else { return Problem("invalid_matcher", "'\(m.name.prefix(64))' is not a label name") }
            guard Silence.builtInNames.contains(m.name) || labelNames.contains(m.name) else {
                return Problem(
                    "unknown_label",
                    "no loaded rule has a label '\(m.name)'; match user, rule, severity or one of: \(labelNames.sorted().joined(separator: ", "))")
            }
            guard m.value.utf8.count <= Silence.maxValueBytes else {
                return Problem("invalid_matcher", "a matcher value is at most \(Silence.maxValueBytes) bytes")
            }
        }
        if matchers.allSatisfy({ $0.matches("") }) {
            return Problem("invalid_matcher", "at least one matcher must not match the empty string (this silence would match every alert of the team)")
        }
        if endsAt <= startsAt { return Problem("ends_before_starts", "endsAt (\(endsAt)) must be after startsAt (\(startsAt))") }
        if endsAt <= now { return Problem("ends_in_past", "endsAt (\(endsAt)) is in the past") }
        if endsAt.milliseconds - startsAt.milliseconds > Silence.maxDurationSeconds * 1000 {
            return Problem("too_long", "a silence lasts at most \(Silence.maxDurationSeconds / 86_400) days")
        }
        if let p = StaffText.problem(createdBy, field: "'createdBy'", maxBytes: Silence.maxCreatedByBytes, required: true) {
            return Problem("invalid_field", p)
        }
        if let p = StaffText.problem(comment, field: "'comment'", maxBytes: Silence.maxCommentBytes, required: true) {
            return Problem("invalid_field", p)
        }
        return nil
    }

    /// The daemon's id of a silence: FNV-1a 64 of its team, matchers, times, author and comment,
    /// in hex, so that a re-delivered command (QoS 1) names the same silence, and
    /// `mobilityctl silence add` can print the id before the daemon answers.
    package static func makeID(
        team: String, matchers: [SilenceMatcher], startsAt: Timestamp, endsAt: Timestamp, createdBy: String, comment: String
    ) -> String {
        var h = FNV1a64()
        func mix(_ s: String) {
            h.combine(s)
            h.combine(0x1f)
        }
        mix(team)
        for m in matchers { mix(m.description) }
        mix(String(startsAt.milliseconds))
        mix(String(endsAt.milliseconds))
        mix(createdBy)
        mix(comment)
        return h.paddedHex
    }

    /// The JSON published retained on `{root}/teams/{team}/silences/{id}`, kept in the store and
    /// read by `mobilityctl silence query`; `status` as Alertmanager's `{"state": …}` when given.
    package func json(state: State? = nil) -> String {
        var w = JSONWriter()
        w.beginObject()
        w.string("id", id)
        w.string("team", team)
        if let state {
            w.beginObject("status")
            w.string("state", state.rawValue)
            w.endObject()
        }
        w.beginArray("matchers")
        for m in matchers { m.write(into: &w) }
        w.endArray()
        w.string("startsAt", startsAt.description)
        w.string("endsAt", endsAt.description)
        w.string("createdBy", createdBy)
        w.string("comment", comment)
        w.endObject()
        return w.text
    }

    /// The matchers in amtool's form, space separated.
    package var matchersText: String { matchers.map(\.description).joined(separator: " ") }

    /// Parses ``json(state:)``'s form (a `status` member is ignored); nil when malformed.
    package static func parse(_ payload: [UInt8]) -> Silence? {
        guard case .success(let v) = JSONValue.parse(payload) else { return nil }
        func str(_ k: String) -> String? { if case .string(let s)? = v[k] { return s }; return nil }
        guard let id = str("id"), let team = str("team"), let starts = str("startsAt").flatMap({ ISO8601.parse($0)?.0 }),
            let ends = str("endsAt").flatMap({ ISO8601.parse($0)?.0 }), let by = str("createdBy"), let comment = str("comment"),
            case .array(let ms)? = v["matchers"], let matchers = parseMatchers(ms)
        else { return nil }
        return Silence(id: id, team: team, matchers: matchers, startsAt: starts, endsAt: ends, createdBy: by, comment: comment)
    }

    /// Parses Alertmanager's matcher objects (`isEqual` defaults to true); nil when one is
    /// malformed or its regular expression does not compile (``matcherProblem(_:)`` says why).
    package static func parseMatchers(_ items: [JSONValue]) -> [SilenceMatcher]? {
        var out: [SilenceMatcher] = []
        for x in items {
            guard case .success(let m) = matcher(x) else { return nil }
            out.append(m)
        }
        return out
    }

    /// One matcher object, or what is wrong with it.
    package static func matcher(_ x: JSONValue) -> Result<SilenceMatcher, Problem> {
        guard case .object(let members) = x else { return .failure(Problem("invalid_matcher", "a matcher is an object {name, value, isRegex, isEqual}")) }
        for (k, _) in members where !["name", "value", "isRegex", "isEqual"].contains(k) {
            return .failure(Problem("unknown_field", "unknown matcher member '\(k.prefix(40))'; expected name, value, isRegex, isEqual"))
        }
        guard case .string(let name)? = x["name"], case .string(let value)? = x["value"] else {
            return .failure(Problem("invalid_matcher", "a matcher needs a string 'name' and 'value'"))
        }
        var isRegex = false, isEqual = true
        switch x["isRegex"] {
        case nil: break
        case .bool(let b)?: isRegex = b
        default: return .failure(Problem("invalid_matcher", "'isRegex' is true or false"))
        }
        switch x["isEqual"] {
        case nil: break
        case .bool(let b)?: isEqual = b
        default: return .failure(Problem("invalid_matcher", "'isEqual' is true or false"))
        }
        guard value.utf8.count <= maxValueBytes else { return .failure(Problem("invalid_matcher", "a matcher value is at most \(maxValueBytes) bytes")) }
        do { return .success(try SilenceMatcher(name: name, value: value, isEqual: isEqual, isRegex: isRegex)) } catch {
            return .failure(Problem("invalid_matcher", "matcher '\(name.prefix(64))': \(error.description)"))
        }
    }
}
