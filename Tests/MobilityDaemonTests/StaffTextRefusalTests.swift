import MobilityModel
import MobilityWire
import Testing

@testable import MobilityDaemon

/// Every text care staff type into a command is refused when it holds a control character: an
/// escape sequence stored in a note would reach the operator's terminal from `mobilityctl audit`
/// or `silence query`. Each command is parsed as the daemon parses it.
@Suite struct StaffTextRefusalTests {
    /// A window-title rewrite (OSC), a screen clear (CSI), the same through the one-byte C1 CSI,
    /// a line break, DEL.
    static let hostile = ["\u{1b}]0;owned\u{07}", "ok\u{1b}[2J", "a\u{9b}31mb", "two\nlines", "del\u{7f}"]
    static let now = Timestamp(milliseconds: 1_780_000_000_000)

    /// `members` as a JSON object, every value a string.
    static func json(_ members: [(String, String)]) -> [UInt8] {
        var w = JSONWriter()
        w.beginObject()
        for (k, v) in members { w.string(k, v) }
        w.endObject()
        return w.bytes
    }

    @Test(arguments: hostile) func acknowledgementNoteAndAuthor(_ bad: String) {
        for payload in [
            Self.json([("alert", "4f1c2e9a0b7d3e21"), ("user", "jamie"), ("by", "nurse.kim"), ("note", bad)]),
            Self.json([("alert", "4f1c2e9a0b7d3e21"), ("user", "jamie"), ("by", bad)])
        ] {
            guard case .failure(let r) = AcknowledgementCommand.parse(team: "ward-a", payload: payload) else {
                Issue.record("accepted: \(String(decoding: payload, as: UTF8.self))")
                continue
            }
            #expect(r.refusal == .invalidField && r.message.contains("without control characters"), "\(r)")
        }
        // The same note without the control character is taken.
        #expect(
            (try? AcknowledgementCommand.parse(
                team: "ward-a", payload: Self.json([("alert", "4f1c2e9a0b7d3e21"), ("user", "jamie"), ("by", "kim"), ("note", "ok")])
            ).get())
                != nil)
    }

    @Test(arguments: hostile) func silenceCommentAndAuthors(_ bad: String) {
        let ends = Timestamp(milliseconds: Self.now.milliseconds + 86_400_000).description
        func add(by: String, comment: String) -> [UInt8] {
            Array(
                #"{"action":"add","matchers":[{"name":"user","value":"jamie"}],"endsAt":"\#(ends)","createdBy":\#(quoted(by)),"comment":\#(quoted(comment))}"#
                    .utf8)
        }
        for payload in [
            add(by: "nurse.kim", comment: bad), add(by: bad, comment: "in hospital"),
            Self.json([("action", "expire"), ("id", "4f1c2e9a0b7d3e21"), ("by", bad)])
        ] {
            guard case .failure(let r) = SilenceCommand.parse(team: "ward-a", payload: payload, now: Self.now, labelNames: []) else {
                Issue.record("accepted: \(String(decoding: payload, as: UTF8.self))")
                continue
            }
            #expect(r.reason == "invalid_field" && r.message.contains("without control characters"), "\(r)")
        }
        #expect((try? SilenceCommand.parse(team: "ward-a", payload: add(by: "kim", comment: "in hospital"), now: Self.now, labelNames: []).get()) != nil)
    }

    @Test(arguments: hostile) func timelineNotesAuthorAndEntryID(_ bad: String) {
        func command(by: String = "nurse.kim", note: String? = nil, entryID: String = "fall-1", entryNote: String? = nil) -> [UInt8] {
            Array(
                (#"{"action":"add","user":"jamie","by":\#(quoted(by)),"# + (note.map { #""note":\#(quoted($0)),"# } ?? "")
                    + #""entry":{"id":\#(quoted(entryID)),"kind":"fall","category":"clinical","date":"2026-03-19""#
                    + (entryNote.map { #","note":\#(quoted($0))"# } ?? "") + "}}").utf8)
        }
        for (payload, reason) in [
            (command(note: bad), "invalid_text"), (command(by: bad), "invalid_text"), (command(entryNote: bad), "invalid_text"),
            (command(entryID: "f" + bad), "invalid_field")
        ] {
            guard case .failure(let r) = TimelineCommand.parse(payload) else {
                Issue.record("accepted: \(String(decoding: payload, as: UTF8.self))")
                continue
            }
            #expect(r.reason == reason && r.message.contains("without control characters"), "\(r)")
        }
        #expect((try? TimelineCommand.parse(command(note: "from the letter", entryNote: "at home")).get()) != nil)
    }
}

/// `s` as a JSON string literal.
private func quoted(_ s: String) -> String {
    var w = JSONWriter()
    w.beginArray()
    w.string(nil, s)
    w.endArray()
    return String(w.text.dropFirst().dropLast())
}
