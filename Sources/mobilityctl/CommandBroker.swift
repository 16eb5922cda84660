import Foundation
import MQTTTransport
import MobilityModel
import MobilityWire

/// The broker options of the care-staff commands (`ack`, `silence`, `event`): where and as whom
/// to connect, under which topic root, and how long to wait for mobilityd's answer; and the one
/// way they send a command and take the answer (``send(_:what:topic:payload:listen:judge:)``).
struct CommandBroker {
    var broker: String?
    var credentials: String?, account = "care-dashboard"
    /// Whether `--account` was given (it needs `--credentials`).
    var accountGiven = false
    var caFile: String?, certFile: String?, keyFile: String?, version: String?
    var root = TopicLayout.defaultRoot
    /// Seconds to wait for the daemon's answer; 0: only for the broker's acknowledgement.
    var wait: TimeInterval = 10

    /// How the options read in a usage text.
    static let usage = """
        --broker URL [--credentials FILE --account NAME] [--ca-file F] [--cert-file F --key-file F]
        [--mqtt-version 3.1.1|5] [--topic-root ROOT] [--wait SECONDS]
        """

    /// Takes `flag` (whose value `value` reads) if it is one of these options; false when it is not.
    /// `command` names the command in error messages (a bad value exits 2).
    mutating func take(_ flag: String, command: String, value: () -> String) -> Bool {
        switch flag {
        case "--broker": broker = value()
        case "--credentials": credentials = value()
        case "--account":
            account = value()
            accountGiven = true
        case "--ca-file": caFile = value()
        case "--cert-file": certFile = value()
        case "--key-file": keyFile = value()
        case "--mqtt-version": version = value()
        case "--topic-root": root = value()
        case "--wait":
            guard let w = Double(value()), w >= 0, w <= 600 else { fail("mobilityctl \(command): --wait is 0-600 seconds") }
            wait = w
        default: return false
        }
        return true
    }

    /// The broker access the options describe (exits 2 with the reason when they are wrong).
    func access(_ command: String) -> BrokerAccess {
        guard let broker else { fail("mobilityctl \(command): --broker is required") }
        let url: BrokerURL
        do { url = try BrokerURL(parsing: broker) } catch { fail("mobilityctl \(command): \(error.description)") }
        if accountGiven, credentials == nil { fail("mobilityctl \(command): --account needs --credentials FILE (its 'account password' lines)") }
        var creds: BrokerCredentials?
        if let credentials { do { creds = try BrokerCredentials.load(credentials) } catch { fail("mobilityctl \(command): \(error.description)") } }
        var protocolVersion: MQTTClientConfiguration.ProtocolVersion = .v5
        if let version {
            guard let p = MQTTClientConfiguration.ProtocolVersion(option: version) else {
                fail("mobilityctl \(command): --mqtt-version must be 3.1.1 or 5")
            }
            protocolVersion = p
        }
        if let problem = BrokerTLSFiles(caFile: caFile, certFile: certFile, keyFile: keyFile).problem(for: url) { fail("mobilityctl \(command): \(problem)") }
        return BrokerAccess(broker: url, credentials: creds, caFile: caFile, certFile: certFile, keyFile: keyFile, protocolVersion: protocolVersion)
    }

    /// The account to log in as: `--account` when a credentials file is given, else anonymous.
    func login(_ access: BrokerAccess) -> String? { access.credentials == nil ? nil : account }

    /// `{root}/teams/{team}/commands/{name}`, where the payload names who acts (a team account's
    /// topic), or, when the command is by the `--account` login itself, that login's own
    /// `{root}/teams/{team}/commands/{name}/{account}` (the broker lets only that login write it,
    /// so the daemon records the login as who acts).
    func commandTopic(team: String, _ name: String, by: String) -> String {
        "\(root)/teams/\(team)/commands/\(name)" + (accountGiven && by == account ? "/\(account)" : "")
    }

    /// Who acts: the name given (`--by`, `--author`), else the `--account` login.
    func actor(_ given: String?) -> String? { given ?? (accountGiven ? account : nil) }

    /// `{root}/teams/{team}/commands/rejected`, where the daemon answers a refusal.
    func rejectedTopic(team: String) -> String { "\(root)/teams/\(team)/commands/rejected" }

    /// What became of a command.
    enum Outcome {
        /// The daemon's answer: what it published, in words.
        case accepted(String)
        /// Sent (`--wait 0`): the broker took it; the daemon's answer was not awaited.
        case sent
        /// Refused, timed out or not sent: the message is printed; the exit code.
        case failed(Int32)
    }

    /// Publishes `payload` on `topic` and, unless `--wait 0`, waits for the daemon's answer among
    /// the messages on `listen` (`judge` recognises it): a refusal (exit 1, its reason and
    /// message printed as `mobilityctl WHAT: refused (reason): message`, escaped for the terminal
    /// as the accepted answer's text is), no answer in time (exit
    /// 1), or a connection failure (exit 1, or 2 for a credentials file without the account).
    func send(
        _ access: BrokerAccess, what: String, topic: String, payload: [UInt8], listen: [String],
        judge: @escaping @Sendable (_ topic: String, _ payload: [UInt8]) -> CommandAnswer?
    ) -> Outcome {
        do throws(BrokerConnectionError) {
            guard wait > 0 else {
                let c = try access.commander(account: login(access))
                defer { c.stop() }
                try c.publishConfirmed(topic: topic, payload: payload)
                return .sent
            }
            switch try CommandAnswer.send(access, account: login(access), topic: topic, payload: payload, listen: listen, timeout: wait, judge: judge) {
            // The answer quotes what the daemon stored and sent: printed escaped (TerminalText).
            case .accepted(let text)?: return .accepted(TerminalText.escaped(text))
            case .refused(let reason, let message)?:
                writeErr("mobilityctl \(what): refused (\(TerminalText.escaped(reason))): \(TerminalText.escaped(message))\n")
                return .failed(1)
            case nil:
                writeErr("mobilityctl \(what): sent to \(topic), but no answer from mobilityd within \(Int(wait)) s (is it running and subscribed?)\n")
                return .failed(1)
            }
        } catch {
            writeErr("mobilityctl \(what): \(error.description)\n")
            return .failed(error.exitCode)
        }
    }
}
