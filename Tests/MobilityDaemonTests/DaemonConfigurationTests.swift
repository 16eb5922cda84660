import Foundation
@testable import MobilityDaemon
import Testing

@Suite struct DaemonConfigurationTests {
    @Test func flagsBeatEnvironmentBeatFile() throws {
        let file = NSTemporaryDirectory() + "mw-conf-\(UUID().uuidString.prefix(8)).conf"
        try "# comment\nbroker = mqtt://file:1\nshards = 3\nrules = file-rules\n".write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let c = try DaemonConfiguration.load(arguments: ["--config", file, "--broker=mqtt://flag:2", "--clock", "event"],
                                             environment: ["MOBILITYD_BROKER": "mqtt://env:3", "MOBILITYD_SHARDS": "5"])
        #expect(c.broker == "mqtt://flag:2")
        #expect(c.shards == 5)
        #expect(c.rules == "file-rules")
        #expect(c.clock == .event)
    }

    @Test(arguments: [
        ["--clock", "sundial"], ["--broker", "http://x"], ["--shards", "0"], ["--nope"], ["--broker"], ["stray"],
        ["--time-zone", "Mars/Base"], ["--cert-file", "c.pem"], ["--mqtt-version", "4"], ["--topic-root", "a/#"],
    ])
    func rejectsBadOptions(args: [String]) {
        #expect(throws: DaemonConfiguration.Problem.self) { try DaemonConfiguration.load(arguments: args, environment: [:]) }
    }

    @Test func helpListsEveryOption() {
        for o in DaemonConfiguration.options { #expect(DaemonConfiguration.usage.contains("--\(o.name)")) }
    }
}
