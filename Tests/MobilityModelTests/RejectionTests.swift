import MobilityModel
import Testing

/// The payload of the `rejected` topic, as published.
@Suite struct RejectionTests {
    @Test func thePublishedBytesAreThoseTheTextHad() {
        // The texts are what the daemon published when it built the payload as a String and
        // converted it to bytes (captured from that code): escaping, a control character, UTF-8,
        // every optional member; then none of them.
        let r = Rejection(.invalidField, "field 'value' must be a number: \"x\" \u{1} é", itemID: "s-1", index: 3)
        let full =
            #"{"reason":"invalid_field","detail":"field 'value' must be a number: \"x\" \u0001 é","topic":"mobility/v1/users/jamie/samples","user":"jamie","id":"s-1","index":3}"#
        #expect(r.jsonBytes(user: "jamie", topic: "mobility/v1/users/jamie/samples") == Array(full.utf8))
        #expect(r.json(user: "jamie", topic: "mobility/v1/users/jamie/samples") == full)
        let bare = #"{"reason":"not_json","detail":"not JSON","topic":"mobility/v1/users/+/samples"}"#
        #expect(Rejection(.notJSON, "not JSON").jsonBytes(user: nil, topic: "mobility/v1/users/+/samples") == Array(bare.utf8))
    }
}
