import Testing

@testable import MQTTTransport

/// The TLS option checks every program applies to its broker options.
@Suite struct BrokerTLSFilesTests {
    @Test(
        arguments: [
            ("mqtts://h:8883", BrokerTLSFiles(), nil),
            ("mqtts://h:8883", BrokerTLSFiles(caFile: "ca.pem"), nil),
            ("mqtts://h:8883", BrokerTLSFiles(certFile: "c.pem", keyFile: "k.pem"), nil),
            ("mqtt://h:1883", BrokerTLSFiles(), nil),
            ("mqtts://h:8883", BrokerTLSFiles(certFile: "c.pem"), "--cert-file and --key-file go together"),
            ("mqtts://h:8883", BrokerTLSFiles(keyFile: "k.pem"), "--cert-file and --key-file go together"),
            ("mqtt://h:1883", BrokerTLSFiles(certFile: "c.pem"), "--cert-file and --key-file go together"),
            ("mqtt://h:1883", BrokerTLSFiles(caFile: "ca.pem"), "--ca-file and --cert-file need an mqtts:// broker"),
            ("mqtt://h:1883", BrokerTLSFiles(certFile: "c.pem", keyFile: "k.pem"), "--ca-file and --cert-file need an mqtts:// broker")
        ] as [(String, BrokerTLSFiles, String?)])
    func problems(_ url: String, _ files: BrokerTLSFiles, _ expected: String?) throws {
        #expect(files.problem(for: try BrokerURL(parsing: url)) == expected)
    }
}
