/// Whether a timeline entry is a clinical event (a hard boundary) or a patient-reported annotation.
package enum EventCategory: UInt8, Hashable, Sendable, CustomStringConvertible {
    /// Injury, surgery, discharge…: splits the user's timeline into segments no window crosses.
    case clinical
    /// Pain, fatigue, heat wave, change of exercise plan…: context, never a boundary.
    case annotation

    /// `clinical` or `annotation`, as the wire format and rules spell it.
    package var description: String { self == .clinical ? "clinical" : "annotation" }
}

/// An entry on a user's timeline: a clinical event on a day, or an annotation over a day range.
package struct TimelineEvent: Hashable, Sendable {
    /// A unique id, so re-sends are idempotent and an entry can be replaced.
    package var id: String
    /// Clinical event or annotation.
    package var category: EventCategory
    /// The kind, e.g. `injury`, `heat_wave`.
    package var kind: String
    /// The first local day it covers.
    package var firstDay: DayNumber
    /// The last local day it covers (equal to `firstDay` for clinical events).
    package var lastDay: DayNumber
    /// Free text (never logged at info level), at most ``maxNoteBytes`` of UTF-8: a longer one
    /// is refused, never cut.
    package var note: String?
    /// The longest note of an entry from the wire (bytes of UTF-8).
    package static let maxNoteBytes = 1000
    /// Who of the care staff entered (or last corrected) it and when; nil for an entry of the
    /// patient's gateway. Kept in the care-team history, not in the engine (which needs none of it).
    package var entered: EntryAttribution?

    package init(
        id: String, category: EventCategory, kind: String, firstDay: DayNumber, lastDay: DayNumber, note: String? = nil,
        entered: EntryAttribution? = nil
    ) {
        self.id = id
        self.category = category
        self.kind = kind
        self.firstDay = firstDay
        self.lastDay = lastDay
        self.note = note
        self.entered = entered
    }

    /// The same entry without its attribution: what the engine and the wire hold of it.
    package var unattributed: TimelineEvent {
        var e = self
        e.entered = nil
        return e
    }

    /// Built-in clinical event kinds.
    package static let clinicalKinds: Set<String> = ["injury", "surgery", "fall", "discharge", "hospital_admission", "treatment_start"]
    /// Built-in annotation kinds.
    package static let annotationKinds: Set<String> = [
        "pain", "fatigue", "heat_wave", "cold_spell", "illness", "exercise_plan_change", "travel", "new_device", "note"
    ]
}

/// Who of the care staff entered a timeline entry, for which team, and when (the daemon's clock).
package struct EntryAttribution: Hashable, Sendable {
    /// The member of staff: the command's `by`, or the name of the HTTP bearer token.
    package var by: String
    /// The team whose command topic or token it came through (empty for a token of every team).
    package var team: String
    /// When the daemon took it.
    package var at: Timestamp

    package init(by: String, team: String, at: Timestamp) {
        self.by = by
        self.team = team
        self.at = at
    }
}
