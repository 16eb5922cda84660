/// A care-staff acknowledgement of a firing alert instance ("seen, I'm on it"): who, when (the
/// daemon's wall clock when it took the command) and an optional note. A firing message carries
/// it as `"acknowledged": {"by", "at", "note"}` until the instance resolves.
public struct AlertAcknowledgement: Hashable, Sendable {
    /// Who acknowledged (the `by` of the command; the broker's ACL decides who may send it).
    public var by: String
    /// When the daemon took the acknowledgement (wall clock).
    public var at: Timestamp
    /// The note, at most ``maxNoteBytes`` of UTF-8; nil when none was given.
    public var note: String?

    /// The longest note accepted, in UTF-8 bytes.
    public static let maxNoteBytes = 500
    /// The longest `by` accepted, in UTF-8 bytes.
    public static let maxByBytes = 100

    /// Creates an acknowledgement.
    public init(by: String, at: Timestamp, note: String?) {
        self.by = by
        self.at = at
        self.note = note
    }

    /// Writes `"acknowledged": {…}` into an open object.
    public func write(into w: inout JSONWriter) {
        w.beginObject("acknowledged")
        w.string("by", by)
        w.string("at", at.description)
        if let note { w.string("note", note) }
        w.endObject()
    }
}
