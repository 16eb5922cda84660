import MobilityModel
import MobilityWire
import Testing

/// The care-staff timeline command (`mobilityctl event`, `{root}/teams/{team}/commands/event`,
/// `POST /api/v1/users/{u}/events`) and the retraction form of the `events` topic: one type,
/// written and read by the same code; every refusal with its own reason.
@Suite struct TimelineCommandTests {
    static let d1 = CivilDate(year: 2026, month: 2, day: 1).dayNumber

    @Test(arguments: [
        TimelineCommand(
            action: .add, user: "jamie", by: "nurse.kim",
            change: .record(TimelineEvent(id: "inj-1", category: .clinical, kind: "injury", firstDay: d1, lastDay: d1, note: "fell on the stairs"))),
        TimelineCommand(
            action: .correct, user: "jamie", by: "dr.lee",
            change: .record(TimelineEvent(id: "ill-1", category: .annotation, kind: "illness", firstDay: d1, lastDay: d1 + 4)),
            note: "dates from the discharge letter"),
        TimelineCommand(action: .retract, user: "jamie", by: nil, change: .retract(id: "inj-1"), note: "entered for the wrong patient")
    ])
    func aCommandReadsBackAsWritten(_ c: TimelineCommand) throws {
        #expect(try TimelineCommand.parse(c.json).get() == c)
    }

    /// Ids are opaque: a new one, one its author chose and those made in earlier forms
    /// (`KIND-hex` by mobilityctl, `KIND-DATE-hex` by the console) are all read as they are.
    @Test(arguments: [TimelineEvent.newID(), "fall-1", "fall-3a9c0f1", "injury-2026-03-19-8badf00d", "entry-8000000000000001"])
    func anyFormOfIDIsRead(_ id: String) throws {
        let c = TimelineCommand(
            action: .correct, user: "jamie", by: "nurse.kim",
            change: .record(TimelineEvent(id: id, category: .clinical, kind: "fall", firstDay: Self.d1, lastDay: Self.d1)))
        #expect(try TimelineCommand.parse(c.json).get().change.id == id)
    }

    /// The entry a command carries is an item of the `events` topic, read by the gateway's decoder.
    @Test func theEntryIsAnEventsItem() throws {
        let e = TimelineEvent(id: "hw", category: .annotation, kind: "heat_wave", firstDay: Self.d1, lastDay: Self.d1 + 2, note: "warning")
        let items = try WireDecoder().events(TimelineChange.record(e).payload, user: "u").get()
        #expect(try items.map { try $0.get() } == [.record(e)])
        let gone = try WireDecoder().events(TimelineChange.retract(id: "hw").payload, user: "u").get()
        #expect(try gone.map { try $0.get() } == [.retract(id: "hw")])
        #expect(String(decoding: TimelineChange.retract(id: "hw").payload, as: UTF8.self) == #"{"id":"hw","retracted":true}"#)
    }

    @Test(arguments: [
        (#"{"id":"x","retracted":false}"#, RejectionReason.invalidField),
        (#"{"id":"x","retracted":true,"kind":"injury"}"#, .invalidField),
        (#"{"retracted":true}"#, .missingField),
        (#"{"id":7,"retracted":true}"#, .invalidField)
    ])
    func aMalformedRetractionIsRejected(_ payload: String, _ reason: RejectionReason) throws {
        let items = try WireDecoder().events(Array(payload.utf8), user: "u").get()
        guard case .failure(let r) = items[0] else { Issue.record("accepted \(payload)"); return }
        #expect(r.reason == reason, "\(payload): \(r)")
    }

    static let entry = #""entry":{"id":"inj-1","kind":"injury","category":"clinical","date":"2026-02-01"}"#

    @Test(arguments: [
        (String(repeating: " ", count: 4097), "payload_too_large"),
        ("{not json", "malformed_json"),
        ("[1]", "malformed_json"),
        (#"{"action":"add","user":"jamie","by":"k",\#(entry),"colour":"red"}"#, "unknown_field"),
        (#"{"action":"amend","user":"jamie","by":"k",\#(entry)}"#, "unknown_action"),
        (#"{"user":"jamie","by":"k",\#(entry)}"#, "missing_field"),
        (#"{"action":"add","by":"k",\#(entry)}"#, "missing_field"),
        (#"{"action":"add","user":"ja/mie","by":"k",\#(entry)}"#, "invalid_field"),
        (#"{"action":"add","user":"jamie","by":7,\#(entry)}"#, "invalid_field"),
        (#"{"action":"add","user":"jamie","by":"k"}"#, "missing_field"),
        (#"{"action":"add","user":"jamie","by":"k","entry":"inj-1"}"#, "invalid_field"),
        (#"{"action":"add","user":"jamie","by":"k","entry":{"kind":"injury","category":"clinical","date":"2026-02-01"}}"#, "missing_field"),
        (#"{"action":"add","user":"jamie","by":"k","entry":{"id":"","kind":"injury","category":"clinical","date":"2026-02-01"}}"#, "invalid_field"),
        (#"{"action":"add","user":"jamie","by":"k","entry":{"id":"inj-1","kind":"injury","date":"2026-02-01"}}"#, "missing_field"),
        (#"{"action":"add","user":"jamie","by":"k","entry":{"id":"inj-1","kind":"injury","category":"clinical","date":"2026-02-30"}}"#, "invalid_field"),
        (
            #"{"action":"add","user":"jamie","by":"k","entry":{"id":"i","kind":"illness","category":"annotation","start":"2026-02-05","end":"2026-02-01"}}"#,
            "end_before_start"
        ),
        (
            #"{"action":"add","user":"jamie","by":"k","entry":{"id":"inj-1","kind":"injury","category":"clinical","date":"2026-02-01","who":"x"}}"#,
            "unknown_field"
        ),
        (#"{"action":"add","user":"jamie","by":"k","entry":{"id":"inj-1","retracted":true}}"#, "unknown_field"),
        (#"{"action":"retract","user":"jamie","by":"k",\#(entry)}"#, "unknown_field"),
        (
            #"{"action":"add","user":"jamie","by":"k","entry":{"id":"inj-1","kind":"injury","category":"clinical","date":"2026-02-01","note":"a\u0007b"}}"#,
            "invalid_text"
        ),
        (#"{"action":"add","user":"jamie","by":"k","note":"line\nbreak",\#(entry)}"#, "invalid_text"),
        (#"{"action":"add","user":"jamie","by":"nurse\u001b[31m",\#(entry)}"#, "invalid_text"),
        (#"{"action":"retract","user":"jamie","by":"k","entry":{"id":"a\tb","retracted":true}}"#, "invalid_field")
    ])
    func aBadCommandIsRefusedWithItsReason(_ payload: String, _ reason: String) {
        switch TimelineCommand.parse(Array(payload.utf8)) {
        case .success(let c): Issue.record("accepted \(payload): \(c)")
        case .failure(let r):
            #expect(r.reason == reason, "\(payload): \(r)")
            #expect(TimelineCommand.reasons.contains(r.reason))
            #expect(!r.message.contains("\u{07}") && !r.message.contains("line\nbreak"), "a note is never quoted")
        }
    }

    @Test func aLongNoteOrIdIsRefused() {
        let note = String(repeating: "n", count: TimelineCommand.maxNoteBytes + 1)
        let c = TimelineCommand(
            action: .add, user: "u", by: "k",
            change: .record(TimelineEvent(id: "e", category: .annotation, kind: "note", firstDay: Self.d1, lastDay: Self.d1, note: note)))
        #expect(TimelineCommand.parse(c.json).failureReason == "invalid_text")
        // Past the events topic's own bound too (1 000 bytes): still a staff text refusal.
        let huge = TimelineCommand(
            action: .add, user: "u", by: "k",
            change: .record(
                TimelineEvent(id: "e", category: .annotation, kind: "note", firstDay: Self.d1, lastDay: Self.d1, note: String(repeating: "n", count: 1_200))))
        #expect(TimelineCommand.parse(huge.json).failureReason == "invalid_text")
        let id = String(repeating: "i", count: TimelineCommand.maxIDBytes + 1)
        #expect(TimelineCommand.parse(TimelineCommand(action: .retract, user: "u", by: "k", change: .retract(id: id)).json).failureReason == "invalid_field")
    }

    /// The kinds are the rules' (the built-in ones and any a rule file declares), each in its category.
    @Test func theKindMustBeKnownInItsCategory() throws {
        func command(_ kind: String, _ category: EventCategory) -> TimelineCommand {
            TimelineCommand(
                action: .add, user: "u", by: "k", change: .record(TimelineEvent(id: "e", category: category, kind: kind, firstDay: Self.d1, lastDay: Self.d1)))
        }
        let clinical = TimelineEvent.clinicalKinds.union(["stroke"]), annotations = TimelineEvent.annotationKinds
        #expect(command("fall", .clinical).check(clinicalKinds: clinical, annotationKinds: annotations) == nil)
        #expect(command("illness", .annotation).check(clinicalKinds: clinical, annotationKinds: annotations) == nil)
        #expect(command("stroke", .clinical).check(clinicalKinds: clinical, annotationKinds: annotations) == nil)
        #expect(command("sprain", .clinical).check(clinicalKinds: clinical, annotationKinds: annotations)?.reason == "unknown_kind")
        #expect(command("fall", .annotation).check(clinicalKinds: clinical, annotationKinds: annotations)?.reason == "invalid_field")
        #expect(command("illness", .clinical).check(clinicalKinds: clinical, annotationKinds: annotations)?.reason == "invalid_field")
        #expect(TimelineCommand(action: .retract, user: "u", by: "k", change: .retract(id: "x")).check(clinicalKinds: [], annotationKinds: []) == nil)
    }
}

extension Result where Success == TimelineCommand, Failure == TimelineCommand.Refusal {
    /// The refusal's reason, nil when accepted.
    var failureReason: String? { if case .failure(let r) = self { r.reason } else { nil } }

}
