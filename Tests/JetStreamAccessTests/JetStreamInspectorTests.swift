import JetStreamAccess
import Testing

/// What the inspector derives from MQTT names as NATS does: subjects and session hashes.
@Suite struct JetStreamInspectorTests {
    @Test func anMQTTFilterBecomesItsJetStreamSubject() {
        #expect(JetStreamInspector.subject("part/3/mobility/v1/users/+/+") == "$MQTT.msgs.part.3.mobility.v1.users.*.*")
    }

    /// The start check finds the consumers by the subjects NATS's MQTT listener makes of the
    /// filters: nats-server's own cases (mqtt_test.go), and a topic root and partition prefix
    /// with a `.`.
    @Test func mqttFiltersBecomeTheSubjectsNATSGivesThem() {
        let cases = [
            ("part/2/mobility/v1/users/+/+", "part.2.mobility.v1.users.*.*"), ("a/#", "a.>"),
            ("part.v2/3/mobility.eu/v1/users/+/+", "part//v2.3.mobility//eu.v1.users.*.*"), ("/", "/./"), ("//", "/././"),
            ("/foo", "/.foo"), ("///foo/", "/././.foo./"), ("//.foo.//", "/././/foo//././"), ("bar/", "bar./"), ("foo//bar", "foo./.bar"),
            (".", "//"), ("./", "//./"), (".//.", "//././/"), ("././/.", "//.//././/"), ("foo../bar/.", "foo////.bar.//"),
            ("foo.bar/baz", "foo//bar.baz")
        ]
        for (topic, subject) in cases {
            #expect(JetStreamInspector.subject(topic) == "$MQTT.msgs." + subject, "\(topic)")
            // A stored message's subject gives its topic back (the partitions' pull consumers).
            if !topic.contains("+") && !topic.contains("#") { #expect(JetStreamInspector.topic(ofSubject: "$MQTT.msgs." + subject) == topic, "\(subject)") }
        }
        #expect(JetStreamInspector.topic(ofSubject: "part.1.x") == nil)
    }

    /// The consumer names NATS's MQTT listener gives a session: nats-server's getHash of the
    /// client id (SHA-256, 8 bytes, base 62), as computed by its algorithm.
    @Test func sessionHashesAreNATSs() {
        #expect(JetStreamInspector.sessionHash(clientID: "mobilityd-part-2") == "APK1ylqK")
        #expect(JetStreamInspector.sessionHash(clientID: "mobilityd-part-0") == "WPBvYUoN")
    }
}
