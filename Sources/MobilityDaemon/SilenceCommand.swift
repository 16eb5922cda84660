import MobilityModel
import MobilityWire

/// A silence command as taken from `{root}/teams/{team}/commands/silence`:
/// `{"action": "add", "matchers": [...], "startsAt"?, "endsAt", "createdBy", "comment"}` or
/// `{"action": "expire", "id": id, "by": name}`.
enum SilenceCommand: Hashable, Sendable {
    /// A new silence (id assigned, `startsAt` defaulted to the daemon's now).
    case add(Silence)
    /// Expire silence `id` of the topic's team now.
    case expire(id: String, by: String)

    /// The largest command payload taken, in bytes.
    static let maxPayloadBytes = 8192

    /// Every reason a command can be refused with (the stable codes published and counted).
    static let refusals = [
        "payload_too_large", "malformed_json", "missing_field", "invalid_field", "unknown_field", "unknown_action", "invalid_matcher",
        "too_many_matchers", "unknown_label", "ends_before_starts", "ends_in_past", "too_long", "unknown_team", "unknown_user", "too_many_silences",
        "unknown_silence", "store_unavailable"
    ]

    /// A refusal with what was readable of the command (for the rejection message).
    struct Rejection: Error, Sendable {
        var reason: String
        var message: String
        var silence: String?
    }

    /// Parses and checks a payload (bounded: its size, each field, no other members); `now` is
    /// the daemon's wall clock, `labelNames` the labels the loaded rules produce, `login` the login
    /// of a person's command topic, who acts (the payload's `by`/`createdBy` may be left out).
    static func parse(team: String, payload: [UInt8], now: Timestamp, labelNames: Set<String>, login: String? = nil) -> Result<SilenceCommand, Rejection> {
        func no(_ r: String, _ m: String, _ id: String? = nil) -> Result<SilenceCommand, Rejection> {
            .failure(Rejection(reason: r, message: m, silence: id))
        }
        guard payload.count <= maxPayloadBytes else {
            return no("payload_too_large", "a silence command is at most \(maxPayloadBytes) bytes, got \(payload.count)")
        }
        guard case .success(let v) = JSONValue.parse(payload), case .object(let members) = v else {
            return no("malformed_json", "expected a JSON object {\"action\": \"add\" | \"expire\", …}")
        }
        func str(_ k: String) -> String?? {
            guard let x = v[k] else { return .some(nil) }
            if case .string(let s) = x { return .some(s) }
            return nil
        }
        guard let actionField = str("action") else { return no("invalid_field", "'action' is a string") }
        switch actionField {
        case "expire":
            for (k, _) in members where !["action", "id", "by"].contains(k) {
                return no("unknown_field", "unknown member '\(k.prefix(40))'; an expire has action, id, by")
            }
            guard let idField = str("id"), let byField = str("by") else { return no("invalid_field", "id and by are strings") }
            guard let id = idField else { return no("missing_field", "missing 'id' (the silence's id)") }
            let actor = StaffCommandTopic.actor(login: login, claimed: byField)
            if case .failure(let m) = actor { return no("invalid_field", m.message, id) }
            guard case .success(let by?) = actor else { return no("missing_field", "missing 'by' (who expires it)", id) }
            guard isSilenceID(id) else { return no("invalid_field", "'id' is a silence id: 16 lower-case hex digits") }
            if let p = StaffText.problem(by, field: "'by'", maxBytes: Silence.maxCreatedByBytes, required: true) { return no("invalid_field", p, id) }
            return .success(.expire(id: id, by: by))
        case "add":
            for (k, _) in members where !["action", "matchers", "startsAt", "endsAt", "createdBy", "comment"].contains(k) {
                return no("unknown_field", "unknown member '\(k.prefix(40))'; an add has action, matchers, startsAt, endsAt, createdBy, comment")
            }
            guard case .array(let items)? = v["matchers"] else {
                return no("missing_field", "missing 'matchers' (an array of {name, value, isRegex, isEqual})")
            }
            guard items.count <= Silence.maxMatchers else {
                return no("too_many_matchers", "a silence has at most \(Silence.maxMatchers) matchers, got \(items.count)")
            }
            var matchers: [SilenceMatcher] = []
            for x in items {
                switch Silence.matcher(x) {
                case .success(let m): matchers.append(m)
                case .failure(let p): return no(p.reason, p.message)
                }
            }
            guard let startsField = str("startsAt"), let endsField = str("endsAt"), let byField = str("createdBy"), let commentField = str("comment")
            else { return no("invalid_field", "startsAt, endsAt, createdBy and comment are strings") }
            guard let endsText = endsField else { return no("missing_field", "missing 'endsAt' (RFC 3339, e.g. 2026-03-07T18:00:00Z)") }
            let actor = StaffCommandTopic.actor(login: login, claimed: byField)
            if case .failure(let m) = actor { return no("invalid_field", m.message.replacingOccurrences(of: "'by'", with: "'createdBy'")) }
            guard case .success(let by?) = actor else { return no("missing_field", "missing 'createdBy' (who silences)") }
            guard let comment = commentField else { return no("missing_field", "missing 'comment' (why)") }
            guard let ends = ISO8601.parse(endsText)?.0 else { return no("invalid_field", "'endsAt' is RFC 3339 with an offset, e.g. 2026-03-07T18:00:00Z") }
            var starts = now
            if let s = startsField {
                guard let t = ISO8601.parse(s)?.0 else { return no("invalid_field", "'startsAt' is RFC 3339 with an offset, e.g. 2026-03-07T08:00:00Z") }
                starts = t
            }
            let id = Silence.makeID(team: team, matchers: matchers, startsAt: starts, endsAt: ends, createdBy: by, comment: comment)
            let silence = Silence(id: id, team: team, matchers: matchers, startsAt: starts, endsAt: ends, createdBy: by, comment: comment)
            // The id goes with the refusal: the sender computed it too and waits for an answer naming it.
            if let p = silence.validate(labelNames: labelNames, now: now) { return no(p.reason, p.message, id) }
            return .success(.add(silence))
        default:
            return no("unknown_action", "'action' is \"add\" or \"expire\"")
        }
    }

    /// Whether `s` has the form of a silence id (16 lower-case hex digits).
    static func isSilenceID(_ s: String) -> Bool {
        s.utf8.count == 16 && s.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
    }
}
