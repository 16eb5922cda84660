/// Whether a timeline entry is a clinical event (a hard boundary) or a patient-reported annotation.
public enum EventCategory: UInt8, Hashable, Sendable, CustomStringConvertible {
    /// Injury, surgery, discharge…: splits the user's timeline into segments no window crosses.
    case clinical
    /// Pain, fatigue, heat wave, change of exercise plan…: context, never a boundary.
    case annotation

    /// `clinical` or `annotation`, as the wire format and rules spell it.
    public var description: String { self == .clinical ? "clinical" : "annotation" }
}

/// An entry on a user's timeline: a clinical event on a day, or an annotation over a day range.
public struct TimelineEvent: Hashable, Sendable {
    /// A unique id, so re-sends are idempotent and an entry can be replaced.
    public var id: String
    /// Clinical event or annotation.
    public var category: EventCategory
    /// The kind, e.g. `injury`, `heat_wave`.
    public var kind: String
    /// The first local day it covers.
    public var firstDay: DayNumber
    /// The last local day it covers (equal to `firstDay` for clinical events).
    public var lastDay: DayNumber
    /// Free text (never logged at info level).
    public var note: String?

    /// Creates an entry.
    public init(id: String, category: EventCategory, kind: String, firstDay: DayNumber, lastDay: DayNumber, note: String? = nil) {
        self.id = id
        self.category = category
        self.kind = kind
        self.firstDay = firstDay
        self.lastDay = lastDay
        self.note = note
    }

    /// Built-in clinical event kinds.
    public static let clinicalKinds: Set<String> = ["injury", "surgery", "fall", "discharge", "hospital_admission", "treatment_start"]
    /// Built-in annotation kinds.
    public static let annotationKinds: Set<String> = [
        "pain", "fatigue", "heat_wave", "cold_spell", "illness", "exercise_plan_change", "travel", "new_device", "note"
    ]
}
