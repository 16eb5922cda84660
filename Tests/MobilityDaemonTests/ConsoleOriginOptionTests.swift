import Foundation
import Glibc
import TestSupport
import Testing

@testable import MobilityDaemon

/// `--console-origin`: the origins a console form may come from, the listener's own by default.
@Suite struct ConsoleOriginOptionTests {
    @Test func theDefaultIsTheListenersOwnAddress() throws {
        let tokens = TemporaryPath.make("mw-tokens", suffix: "")
        try "care-team:\(String(repeating: "a", count: 64))\n".write(toFile: tokens, atomically: true, encoding: .utf8)
        chmod(tokens, 0o600)
        defer { try? FileManager.default.removeItem(atPath: tokens) }
        let listener = ["--http-address", "127.0.0.1:9465", "--http-tokens", tokens]
        #expect(try DaemonConfiguration.load(arguments: listener, environment: [:]).consoleOrigins == ["http://127.0.0.1:9465"])
        let proxied = try DaemonConfiguration.load(
            arguments: listener + ["--console-origin", "https://ward.example,https://ward.example:8443/"], environment: [:])
        #expect(proxied.consoleOrigins == ["https://ward.example", "https://ward.example:8443"])
    }

    @Test(arguments: [
        "ward.example", "ftp://ward.example", "https://", "https://Ward.example", "https://ward.example/console", "https://ward.example:0",
        "https://ward.example:443", "http://ward.example:80", "https://ward.example:port", "https://ward.example,", "https://user@ward.example"
    ])
    func aMalformedOriginIsRefused(origin: String) {
        #expect(throws: DaemonConfiguration.Problem.self) { try DaemonConfiguration.consoleOrigins(origin) }
    }

    @Test func anOriginNeedsTheListener() {
        #expect(throws: DaemonConfiguration.Problem.self) {
            try DaemonConfiguration.load(arguments: ["--console-origin", "https://ward.example"], environment: [:])
        }
    }
}
