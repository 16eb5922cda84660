import Foundation
import Glibc
import MQTTTransport
import TestSupport
import Testing

/// `mobility-sim --credentials`: the file's format and the private-file rule.
@Suite struct BrokerCredentialsTests {
    @Test func parsesAccountPasswordLines() throws {
        let c = try BrokerCredentials(path: "creds", text: "# gateways\n\njamie  s3cret \n  care-dashboard pass with spaces\n")
        #expect(c.password(for: "jamie") == "s3cret")
        #expect(c.password(for: "care-dashboard") == "pass with spaces")
        #expect(c.password(for: "alex") == nil)
        #expect(c.missing(["alex", "jamie", "zoe", "alex"]) == ["alex", "zoe"])
    }

    @Test(arguments: [
        ("jamie s\nalex\n", "creds:2: expected 'account password'"),
        ("jamie s\n\njamie t\n", "creds:3: a second line for account jamie")
    ])
    func badLinesNameTheLineAndNoPassword(text: String, message: String) {
        #expect { try BrokerCredentials(path: "creds", text: text) } throws: { ($0 as? BrokerCredentials.Problem)?.description == message }
    }

    @Test(arguments: [(mode_t(0o600), true), (0o400, true), (0o640, false), (0o604, false)])
    func onlyPrivateFilesAreRead(mode: mode_t, accepted: Bool) throws {
        let path = TemporaryPath.make("mw-creds")
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "jamie s3cret\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, mode)
        do {
            let c = try BrokerCredentials.load(path)
            #expect(accepted && c.password(for: "jamie") == "s3cret")
        } catch {
            #expect(!accepted)
            #expect(
                error.description == "credentials file \(path) holds passwords but is accessible to group or others "
                    + "(mode 0\(String(mode, radix: 8))); run 'chmod 600 \(path)'")
        }
    }

    @Test func aDirectoryIsNoCredentialsFile() {
        #expect { try BrokerCredentials.load(NSTemporaryDirectory()) } throws: { "\($0)".contains("is not a regular file") }
    }
}
