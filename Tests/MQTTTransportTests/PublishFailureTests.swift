import CMosquitto
import MQTTTransport
import Testing

/// The publish errors libmosquitto returns for a message it can never send: permanent, and named
/// as the refusal counters and dead letters name them.
@Suite struct PublishFailureTests {
    @Test func permanentErrorsHaveTheirLabels() {
        let cases: [(mosq_err_t, String)] = [
            (MOSQ_ERR_INVAL, "invalid"), (MOSQ_ERR_PAYLOAD_SIZE, "payload_size"), (MOSQ_ERR_MALFORMED_UTF8, "malformed_utf8"),
            (MOSQ_ERR_OVERSIZE_PACKET, "oversize_packet"), (MOSQ_ERR_QOS_NOT_SUPPORTED, "qos_not_supported"),
            (MOSQ_ERR_RETAIN_NOT_SUPPORTED, "retain_not_supported")
        ]
        for (rc, label) in cases {
            #expect(MQTTClient.publishFailureIsPermanent(rc.rawValue))
            #expect(MQTTClient.publishFailureLabel(rc.rawValue) == label)
        }
    }

    @Test func otherErrorsAreNamedByNumber() {
        #expect(MQTTClient.publishFailureLabel(MOSQ_ERR_NO_CONN.rawValue) == "library_error_\(MOSQ_ERR_NO_CONN.rawValue)")
        #expect(!MQTTClient.publishFailureIsPermanent(MOSQ_ERR_NO_CONN.rawValue))
    }
}
