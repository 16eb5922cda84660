import MobilityModel

extension ConsolePage {
    /// The forms of a firing alert.
    static func alertForms(_ user: String, _ f: ConsolePatient.Firing, csrf: String, into m: inout Markup) {}

    /// The form that expires a silence.
    static func expireForm(_ user: String, _ s: Silence, csrf: String, into m: inout Markup) {}

    /// The forms of a timeline entry.
    static func entryForms(_ page: ConsolePatientPage, _ e: TimelineEvent, csrf: String, into m: inout Markup) {}

    /// The form that records a new entry.
    static func recordForm(_ page: ConsolePatientPage, csrf: String, into m: inout Markup) {}
}
