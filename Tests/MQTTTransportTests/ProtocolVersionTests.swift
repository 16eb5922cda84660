import MQTTTransport
import Testing

/// `--mqtt-version` means the same to the daemon and every tool.
@Suite struct ProtocolVersionTests {
    @Test(arguments: [("3.1.1", "3.1.1"), ("3", "3.1.1"), ("311", "3.1.1"), ("5", "5")])
    func theAcceptedSpellingsNameTheirVersion(option: String, version: String) {
        #expect(MQTTClientConfiguration.ProtocolVersion(option: option)?.rawValue == version)
    }

    @Test(arguments: ["", "4", "5.0", "3.1", "v5", "mqtt5"])
    func anythingElseIsNoVersion(option: String) {
        #expect(MQTTClientConfiguration.ProtocolVersion(option: option) == nil)
    }
}
