/// Why an inbound message, or one sample in it, was refused. The raw value is the stable
/// `reason` string published on the `rejected` topic and used as the metrics label.
package enum RejectionReason: String, CaseIterable, Hashable, Sendable {
    case notJSON = "not_json"
    case payloadTooLarge = "payload_too_large"
    case missingField = "missing_field"
    case invalidField = "invalid_field"
    case unknownType = "unknown_type"
    case unknownUnit = "unknown_unit"
    case unitMismatch = "unit_mismatch"
    case notFinite = "not_finite"
    case outOfRange = "out_of_range"
    case endBeforeStart = "end_before_start"
    case inFuture = "in_future"
    case tooLate = "too_late"
    case userMismatch = "user_mismatch"
    case invalidUser = "invalid_user"
    case invalidTimeZone = "invalid_time_zone"
    /// A profile's `careTeams` is not a list of at most 8 team ids (`a-z 0-9 - _`, 1–64).
    case invalidTeam = "invalid_team"
    case tooManyItems = "too_many_items"
    /// A timeline entry dated outside the user's history horizon or after the user's today.
    case dateOutOfRange = "date_out_of_range"
    /// A new timeline entry for a user who already holds the maximum number of entries.
    case tooManyEntries = "too_many_entries"
    /// A retraction of a timeline entry the user does not hold.
    case unknownEntry = "unknown_entry"
    /// A `samples`, `events` or `deletions` message published retained, which the broker would
    /// deliver again on every reconnect (only a profile may be retained).
    case retainedInput = "retained_input"
}

/// A refusal: the reason, a human detail, and the id of the refused item if it had one.
package struct Rejection: Hashable, Sendable, Error, CustomStringConvertible {
    /// The stable reason.
    package var reason: RejectionReason
    /// A specific, human-readable explanation (`field 'value' must be a number`).
    package var detail: String
    /// The id of the refused sample or event, when known.
    package var itemID: String?
    /// The index of the refused item in a batch, when the payload was an array.
    package var index: Int?
    /// How many items of the message it stands for (``itemID`` and ``index`` name the first):
    /// more than one when a message's refusals of one reason are published as one.
    package var count = 1

    package init(_ reason: RejectionReason, _ detail: String, itemID: String? = nil, index: Int? = nil) {
        self.reason = reason
        self.detail = detail
        self.itemID = itemID
        self.index = index
    }

    /// `reason: detail`, e.g. `invalid_field: field 'value' must be a number`.
    package var description: String { "\(reason.rawValue): \(detail)" }

    /// The JSON published on the `rejected` topic, as text.
    package func json(user: String?, topic: String) -> String { String(decoding: jsonBytes(user: user, topic: topic), as: UTF8.self) }

    /// The JSON published on the `rejected` topic, as the bytes that are published.
    package func jsonBytes(user: String?, topic: String) -> [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.string("reason", reason.rawValue)
        w.string("detail", detail)
        w.string("topic", topic)
        if let user { w.string("user", user) }
        if let itemID { w.string("id", itemID) }
        if let index { w.int("index", Int64(index)) }
        if count > 1 { w.int("count", Int64(count)) }
        w.endObject()
        return w.bytes
    }
}
