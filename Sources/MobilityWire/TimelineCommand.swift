import MobilityModel

/// A care-staff command on a patient's timeline: record a clinical event or an annotation,
/// correct one, or retract one. `mobilityctl event` publishes it on
/// `{root}/teams/{team}/commands/event`; the report listener takes the same JSON on
/// `POST /api/v1/users/{u}/events`; mobilityd parses both with ``parse(_:)``:
///
/// ```json
/// {"action": "add", "user": "jamie", "by": "nurse.kim",
///  "entry": {"id": "inj-1", "kind": "injury", "category": "clinical", "date": "2026-02-01"}}
/// {"action": "correct", "user": "jamie", "by": "nurse.kim", "note": "date from the discharge letter",
///  "entry": {"id": "inj-1", "kind": "injury", "category": "clinical", "date": "2026-02-03"}}
/// {"action": "retract", "user": "jamie", "by": "nurse.kim", "entry": {"id": "inj-1", "retracted": true}}
/// ```
///
/// `entry` is one item of the user's `events` topic (``TimelineChange``), so the daemon applies
/// a command exactly as it applies that item from the patient's gateway. `note` says why (it goes
/// to the audit trail); the entry's own `note` is the clinical note kept with the entry.
package struct TimelineCommand: Hashable, Sendable {
    /// What the command does.
    package enum Action: String, Hashable, Sendable, CaseIterable {
        /// A new entry (its id must be new for the user).
        case add
        /// Replace the entry with the same id (new dates, kind or note).
        case correct
        /// Remove the entry with the id.
        case retract
    }

    /// What it does.
    package var action: Action
    /// The patient.
    package var user: String
    /// Who of the staff sends it (required on MQTT; over HTTP the token's name stands for it).
    package var by: String?
    /// The entry to record, or its retraction.
    package var change: TimelineChange
    /// Why (for the audit trail), optional.
    package var note: String?

    package init(action: Action, user: String, by: String?, change: TimelineChange, note: String? = nil) {
        self.action = action
        self.user = user
        self.by = by
        self.change = change
        self.note = note
    }

    /// The largest command taken, in bytes.
    package static let maxPayloadBytes = 4096
    /// The longest entry id, in bytes.
    package static let maxIDBytes = 128
    /// The longest `by`, in bytes (as an acknowledgement's).
    package static let maxByBytes = AlertAcknowledgement.maxByBytes
    /// The longest note (the entry's and the command's), in bytes.
    package static let maxNoteBytes = 500

    /// Every reason a command can be refused with: the stable codes of the answer, counted in
    /// `mobilityd_timeline_commands_total{result}`. The ones the patient's `events` topic also
    /// uses (`missing_field`, `invalid_field`, `end_before_start`, `date_out_of_range`,
    /// `too_many_entries`) mean the same there.
    package static let reasons = [
        "payload_too_large", "malformed_json", "missing_field", "invalid_field", "unknown_field", "unknown_action", "invalid_text",
        "end_before_start", "unknown_kind", "unknown_user", "entry_exists", "unknown_entry", "date_out_of_range",
        "too_many_entries", "store_unavailable"
    ]

    /// Why a command was refused: a code of ``reasons``, a message for people, and what was
    /// readable of the command (the entry id and the user), for the answer.
    package struct Refusal: Error, Hashable, Sendable {
        /// The stable code.
        package var reason: String
        /// What is wrong, specifically (it never quotes a note).
        package var message: String
        /// The entry id, when readable.
        package var id: String?
        /// The user, when readable.
        package var user: String?

        package init(_ reason: String, _ message: String, id: String? = nil, user: String? = nil) {
            self.reason = reason
            self.message = message
            self.id = id
            self.user = user
        }
    }

    /// The command's JSON (as ``parse(_:)`` reads it).
    package var json: [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        w.string("action", action.rawValue)
        w.string("user", user)
        if let by { w.string("by", by) }
        if let note { w.string("note", note) }
        change.write(into: &w, key: "entry")
        w.endObject()
        return w.bytes
    }

    /// Parses and checks a command (bounded: the size, each field, no other members; `entry` as
    /// the `events` topic's decoder reads an item, with the bounds of staff input on top). What
    /// needs the daemon's state (the rules' kinds, the user's teams and entries, the dates
    /// against the clock) is checked where that state is.
    package static func parse(_ payload: [UInt8]) -> Result<TimelineCommand, Refusal> {
        func no(_ r: String, _ m: String, id: String? = nil, user: String? = nil) -> Result<TimelineCommand, Refusal> {
            .failure(Refusal(r, m, id: id, user: user))
        }
        guard payload.count <= maxPayloadBytes else {
            return no("payload_too_large", "a timeline command is at most \(maxPayloadBytes) bytes, got \(payload.count)")
        }
        guard case .success(let v) = JSONValue.parse(payload), case .object(let members) = v else {
            return no("malformed_json", "expected a JSON object {\"action\", \"user\", \"by\", \"entry\", \"note\"}")
        }
        for (k, _) in members where !["action", "user", "by", "entry", "note"].contains(k) {
            return no("unknown_field", "unknown member '\(k.prefix(40))'; expected action, user, by, entry, note")
        }
        func str(_ k: String) -> String?? {
            guard let x = v[k] else { return .some(nil) }
            if case .string(let s) = x { return .some(s) }
            return nil
        }
        guard let actionField = str("action"), let userField = str("user"), let byField = str("by"), let noteField = str("note") else {
            return no("invalid_field", "action, user, by and note are strings")
        }
        guard let actionText = actionField else { return no("missing_field", "missing 'action' (add, correct or retract)") }
        guard let action = Action(rawValue: actionText) else { return no("unknown_action", "'action' is \"add\", \"correct\" or \"retract\"") }
        guard let user = userField else { return no("missing_field", "missing 'user' (the patient)") }
        guard TopicLayout.isValidUser(user) else { return no("invalid_field", "'user' is 1-64 of A-Z a-z 0-9 _ -") }
        guard let entry = v["entry"] else { return no("missing_field", "missing 'entry' (the timeline entry, or its retraction)", user: user) }
        guard case .object(let entryMembers) = entry else { return no("invalid_field", "'entry' is a JSON object", user: user) }
        let entryID: String? = if case .string(let s)? = entry["id"] { s } else { nil }
        func refuse(_ r: String, _ m: String) -> Result<TimelineCommand, Refusal> { no(r, m, id: entryID, user: user) }
        if let by = byField, let p = StaffText.problem(by, field: "'by'", maxBytes: maxByBytes, required: true) { return refuse("invalid_text", p) }
        if let note = noteField, let p = StaffText.problem(note, field: "'note'", maxBytes: maxNoteBytes, required: false) {
            return refuse("invalid_text", p)
        }
        let allowed: Set<String> =
            action == .retract ? ["id", "retracted"] : ["id", "kind", "category", "date", "start", "end", "note"]
        for (k, _) in entryMembers where !allowed.contains(k) {
            let expected = action == .retract ? "a retraction is {\"id\", \"retracted\": true}" : "an entry has id, kind, category, date or start/end, note"
            return refuse("unknown_field", "unknown member '\(k.prefix(40))' of 'entry'; \(expected)")
        }
        guard let id = entryID else {
            return refuse(entry["id"] == nil ? "missing_field" : "invalid_field", "'entry' needs an 'id' string (the entry's id)")
        }
        if let p = StaffText.problem(id, field: "the entry's 'id'", maxBytes: maxIDBytes, required: true) { return refuse("invalid_field", p) }
        // Staff text is checked before the entry is decoded, so that a note is refused for what it
        // is (`invalid_text`: control characters, over maxNoteBytes) whatever the decoder's bounds.
        if case .string(let n)? = entry["note"], let p = StaffText.problem(n, field: "the entry's 'note'", maxBytes: maxNoteBytes, required: false) {
            return refuse("invalid_text", p)
        }
        let change: TimelineChange
        switch WireDecoder().timelineChange(entry) {
        case .failure(let r): return refuse(r.reason.rawValue, r.detail)
        case .success(let c): change = c
        }
        switch (action, change) {
        case (.retract, .record): return refuse("invalid_field", "a retraction's entry is {\"id\": …, \"retracted\": true}")
        case (.add, .retract), (.correct, .retract): return refuse("invalid_field", "an \(action.rawValue) names the whole entry, not a retraction")
        case (_, .record(let e)):
            guard entry["category"] != nil else { return refuse("missing_field", "the entry needs its 'category' (clinical or annotation)") }
            if let n = e.note, let p = StaffText.problem(n, field: "the entry's 'note'", maxBytes: maxNoteBytes, required: false) {
                return refuse("invalid_text", p)
            }
        case (.retract, .retract): break
        }
        return .success(TimelineCommand(action: action, user: user, by: byField, change: change, note: noteField))
    }

    /// Checks the entry's kind against the rules' kinds (the built-in ones and those the rules
    /// declare): a kind must be known, in the category the rules give it.
    package func check(clinicalKinds: Set<String>, annotationKinds: Set<String>) -> Refusal? {
        guard case .record(let e) = change else { return nil }
        let category: EventCategory
        if clinicalKinds.contains(e.kind) {
            category = .clinical
        } else if annotationKinds.contains(e.kind) {
            category = .annotation
        } else {
            return Refusal(
                "unknown_kind", "unknown kind '\(e.kind.prefix(64))'; known: \(clinicalKinds.union(annotationKinds).sorted().joined(separator: ", "))",
                id: e.id, user: user)
        }
        guard e.category == category else {
            return Refusal(
                "invalid_field", "kind \(e.kind) is a \(category == .clinical ? "clinical event" : "annotation"), not \(e.category)", id: e.id, user: user)
        }
        return nil
    }
}
