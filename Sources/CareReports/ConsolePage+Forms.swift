import MobilityModel

/// The patient page's forms: plain HTML forms (no script), each posting to the console with the
/// session's CSRF token; the daemon answers with the page again (refused) or a redirect (taken).
extension ConsolePage {
    /// The labels of the forms' fields, by form: what a refusal calls a field on the page
    /// (``FormLabels/wording(_:action:)``) is what the person read beside it.
    package enum FormLabels {
        static let ackNote = "Note (optional)"
        static let silenceWhy = "Why"
        static let kind = "Kind"
        static let addFirst = "On (or from)", addLast = "To (for a span, optional)", addNote = "Clinical note (optional)"
        static let correctFirst = "From", correctLast = "To (for a span)", correctNote = "Clinical note", correctWhy = "Why the correction"
        static let retractWhy = "Why retract it"

        /// The command's names for the fields of the form posted to `action` (`ack`, `silence`,
        /// and the events form's `add`, `correct`, `retract`), longest first, with their labels.
        static func labels(action: String) -> [(field: String, label: String)] {
            switch action {
            case "ack": [("'note'", ackNote)]
            case "silence": [("'comment'", silenceWhy)]
            case "add", "correct":
                [
                    ("the entry's 'note'", action == "add" ? addNote : correctNote), ("field 'note'", action == "add" ? addNote : correctNote),
                    ("field 'kind'", kind), ("'kind'", kind), ("'date'", action == "add" ? addFirst : correctFirst),
                    ("'start'", action == "add" ? addFirst : correctFirst), ("'end'", action == "add" ? addLast : correctLast)
                ] + (action == "correct" ? [("'note'", correctWhy)] : [])
            case "retract": [("'note'", retractWhy)]
            default: []
            }
        }

        /// A refusal's message in the form's words: each field name of the command it quotes
        /// (`'end' is before 'start'`) becomes the label beside the field (`“To (for a span)” is
        /// before “From”`); names the form has no field for stay as they are.
        package static func wording(_ message: String, action: String) -> String {
            var m = message
            for (field, label) in labels(action: action) { m = m.replacing(field, with: "“\(label)”") }
            return m
        }
    }

    /// The durations a silence can be given, in hours.
    package static let silenceHours: [(Int, String)] = [(1, "1 hour"), (4, "4 hours"), (8, "8 hours"), (24, "1 day"), (72, "3 days"), (168, "7 days")]

    /// Acknowledge (with a note) and silence (with a duration and a comment) a firing alert, each
    /// while it is not yet.
    static func alertForms(_ user: String, _ f: ConsolePatient.Firing, csrf: String, into m: inout Markup) {
        if f.acknowledgedBy == nil {
            form("/console/patients/\(user)/ack", csrf: csrf, into: &m) { m in
                hidden("alert", f.id, into: &m)
                text("note", FormLabels.ackNote, maxBytes: AlertAcknowledgement.maxNoteBytes, required: false, into: &m)
                m.element("button", [("type", "submit")], text: "Acknowledge")
            }
        }
        guard f.silencedBy.isEmpty else { return }
        form("/console/patients/\(user)/silence", csrf: csrf, into: &m) { m in
            hidden("rule", f.rule, into: &m)
            m.open("label")
            m.add("Silence " + NumberText.kind(f.rule) + " for ")
            m.open("select", [("name", "hours")])
            for (h, label) in silenceHours { m.element("option", [("value", String(h))] + (h == 24 ? [("selected", "selected")] : []), text: label) }
            m.close("select")
            m.close("label")
            text("comment", FormLabels.silenceWhy, maxBytes: 500, required: true, into: &m)
            m.element("button", [("type", "submit")], text: "Silence")
        }
    }

    /// End a silence now.
    static func expireForm(_ user: String, _ s: Silence, csrf: String, into m: inout Markup) {
        form("/console/patients/\(user)/silence/expire", csrf: csrf, into: &m) { m in
            hidden("id", s.id, into: &m)
            m.element("button", [("type", "submit")], text: "End this silence now")
        }
    }

    /// Correct or retract an entry (folded away until opened).
    static func entryForms(_ page: ConsolePatientPage, _ e: TimelineEvent, csrf: String, into m: inout Markup) {
        let user = page.patient.user
        m.open("details")
        m.element("summary", text: "Correct or retract")
        form("/console/patients/\(user)/events", csrf: csrf, into: &m) { m in
            hidden("action", "correct", into: &m)
            hidden("id", e.id, into: &m)
            hidden("kind", e.kind, into: &m)
            date("first", FormLabels.correctFirst, value: NumberText.iso(e.firstDay), required: true, into: &m)
            date("last", FormLabels.correctLast, value: e.lastDay == e.firstDay ? "" : NumberText.iso(e.lastDay), required: false, into: &m)
            text("note", FormLabels.correctNote, maxBytes: 500, required: false, value: e.note ?? "", into: &m)
            text("why", FormLabels.correctWhy, maxBytes: 500, required: false, into: &m)
            m.element("button", [("type", "submit")], text: "Correct")
        }
        form("/console/patients/\(user)/events", csrf: csrf, into: &m) { m in
            hidden("action", "retract", into: &m)
            hidden("id", e.id, into: &m)
            text("why", FormLabels.retractWhy, maxBytes: 500, required: false, into: &m)
            m.element("button", [("type", "submit")], text: "Retract")
        }
        m.close("details")
    }

    /// Record a clinical event or an annotation.
    static func recordForm(_ page: ConsolePatientPage, csrf: String, into m: inout Markup) {
        guard !page.kinds.clinical.isEmpty || !page.kinds.annotation.isEmpty else { return }
        m.element("h2", text: "Record an event or annotation")
        form("/console/patients/\(page.patient.user)/events", csrf: csrf, into: &m) { m in
            hidden("action", "add", into: &m)
            if let id = page.newEntryID { hidden("id", id, into: &m) }
            m.open("label")
            m.add(FormLabels.kind + " ")
            m.open("select", [("name", "kind"), ("required", "required")])
            for (group, kinds) in [("Clinical events", page.kinds.clinical), ("Annotations", page.kinds.annotation)] where !kinds.isEmpty {
                m.open("optgroup", [("label", group)])
                for k in kinds { m.element("option", [("value", k)], text: NumberText.kind(k)) }
                m.close("optgroup")
            }
            m.close("select")
            m.close("label")
            date("first", FormLabels.addFirst, value: NumberText.iso(page.today), required: true, into: &m)
            date("last", FormLabels.addLast, value: "", required: false, into: &m)
            text("note", FormLabels.addNote, maxBytes: 500, required: false, into: &m)
            m.element("button", [("type", "submit")], text: "Record")
        }
    }

    private static func form(_ action: String, csrf: String, into m: inout Markup, _ body: (inout Markup) -> Void) {
        m.open("form", [("class", "action"), ("method", "post"), ("action", action)])
        csrfField(csrf, into: &m)
        body(&m)
        m.close("form")
    }

    private static func hidden(_ name: String, _ value: String, into m: inout Markup) {
        m.element("input", [("type", "hidden"), ("name", name), ("value", value)])
    }

    private static func text(_ name: String, _ label: String, maxBytes: Int, required: Bool, value: String = "", into m: inout Markup) {
        m.open("label")
        m.add(label + " ")
        m.element(
            "input",
            [("type", "text"), ("name", name), ("maxlength", String(maxBytes)), ("value", value)] + (required ? [("required", "required")] : []))
        m.close("label")
    }

    private static func date(_ name: String, _ label: String, value: String, required: Bool, into m: inout Markup) {
        m.open("label")
        m.add(label + " ")
        m.element("input", [("type", "date"), ("name", name), ("value", value)] + (required ? [("required", "required")] : []))
        m.close("label")
    }
}
