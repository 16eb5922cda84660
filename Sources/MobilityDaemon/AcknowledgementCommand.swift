import MobilityModel
import MobilityWire

/// An acknowledgement command as taken from `{root}/teams/{team}/commands/ack`:
/// `{"alert": id, "user": u, "by": name, "note": text}` (`note` optional).
struct AcknowledgementCommand: Hashable, Sendable {
    var team: String
    var alert: String
    var user: String
    var by: String
    var note: String?

    /// The largest command payload taken, in bytes.
    static let maxPayloadBytes = 4096

    /// Why a command was refused; the raw value is the stable reason published and counted.
    enum Refusal: String, Sendable, CaseIterable {
        case payloadTooLarge = "payload_too_large"
        /// Published retained: the broker would deliver it again on every reconnect.
        case retainedInput = "retained_input"
        case malformedJSON = "malformed_json"
        case missingField = "missing_field"
        case invalidField = "invalid_field"
        case unknownField = "unknown_field"
        /// No firing instance with this id of a patient of the topic's team, whatever the reason
        /// (another team's patient, a patient of no team, no such user, no such instance).
        case unknownAlert = "unknown_alert"
        case alertResolved = "alert_resolved"
        case alreadyAcknowledged = "already_acknowledged"
        case storeUnavailable = "store_unavailable"
    }

    /// A refusal with what was readable of the command (for the rejection message).
    struct Rejection: Error, Sendable {
        var refusal: Refusal
        var message: String
        var alert: String?
        var user: String?
    }

    /// Parses a payload (bounded: the size, each field's length, no other members); `login` is the
    /// login of a person's command topic, who acknowledges (the payload's `by` may be left out).
    static func parse(team: String, payload: [UInt8], login: String? = nil) -> Result<AcknowledgementCommand, Rejection> {
        func no(_ r: Refusal, _ m: String, _ alert: String? = nil, _ user: String? = nil) -> Result<AcknowledgementCommand, Rejection> {
            .failure(Rejection(refusal: r, message: m, alert: alert, user: user))
        }
        guard payload.count <= maxPayloadBytes else {
            return no(.payloadTooLarge, "an acknowledgement is at most \(maxPayloadBytes) bytes, got \(payload.count)")
        }
        guard case .success(let v) = JSONValue.parse(payload), case .object(let members) = v else {
            return no(.malformedJSON, "expected a JSON object {\"alert\", \"user\", \"by\", \"note\"}")
        }
        for (k, _) in members where !["alert", "user", "by", "note"].contains(k) {
            return no(.unknownField, "unknown member '\(k.prefix(40))'; expected alert, user, by, note")
        }
        func str(_ k: String) -> String?? {
            guard let x = v[k] else { return .some(nil) }
            if case .string(let s) = x { return .some(s) }
            return nil
        }
        guard let alertField = str("alert"), let userField = str("user"), let byField = str("by"), let note = str("note") else {
            return no(.invalidField, "alert, user, by and note are strings")
        }
        guard let alert = alertField else { return no(.missingField, "missing 'alert' (the alert instance id)") }
        guard let user = userField else { return no(.missingField, "missing 'user'", alert) }
        let actor: String?
        switch StaffCommandTopic.actor(login: login, claimed: byField) {
        case .success(let a): actor = a
        case .failure(let m): return no(.invalidField, m.message, alert, user)
        }
        guard let by = actor else { return no(.missingField, "missing 'by' (who acknowledges)", alert, user) }
        guard !alert.isEmpty, alert.utf8.count <= 64, alert.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }) else {
            return no(.invalidField, "'alert' is an instance id: 1-64 lower-case hex digits")
        }
        guard TopicLayout.isValidUser(user) else { return no(.invalidField, "'user' is 1-64 of A-Z a-z 0-9 _ -", alert) }
        if let p = StaffText.problem(by, field: "'by'", maxBytes: AlertAcknowledgement.maxByBytes, required: true) {
            return no(.invalidField, p, alert, user)
        }
        if let note, let p = StaffText.problem(note, field: "'note'", maxBytes: AlertAcknowledgement.maxNoteBytes, required: false) {
            return no(.invalidField, p, alert, user)
        }
        return .success(AcknowledgementCommand(team: team, alert: alert, user: user, by: by, note: note.flatMap { $0.isEmpty ? nil : $0 }))
    }
}
