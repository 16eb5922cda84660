/// A care-staff acknowledgement of a firing alert instance ("seen, I'm on it"): who, when (the
/// daemon's wall clock when it took the command) and an optional note. A firing message carries
/// it as `"acknowledged": {"by", "at", "note"}` until the instance resolves.
package struct AlertAcknowledgement: Hashable, Sendable {
    /// Who acknowledged (the `by` of the command; the broker's ACL decides who may send it).
    package var by: String
    /// When the daemon took the acknowledgement (wall clock).
    package var at: Timestamp
    /// The note, at most ``maxNoteBytes`` of UTF-8; nil when none was given.
    package var note: String?

    /// The longest note accepted, in UTF-8 bytes.
    package static let maxNoteBytes = 500
    /// The longest `by` accepted, in UTF-8 bytes.
    package static let maxByBytes = 100

    package init(by: String, at: Timestamp, note: String?) {
        self.by = by
        self.at = at
        self.note = note
    }

    /// Writes `"acknowledged": {…}` into an open object.
    package func write(into w: inout JSONWriter) {
        w.beginObject("acknowledged")
        w.string("by", by)
        w.string("at", at.description)
        if let note { w.string("note", note) }
        w.endObject()
    }
}
