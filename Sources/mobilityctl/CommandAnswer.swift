import Foundation
import MQTTTransport
import MobilityModel
import Synchronization

/// What the daemon made of a care-staff command (`mobilityctl ack`, `silence add`): it answers
/// by publishing (the retained alert or silence), or refuses on the team's `commands/rejected`.
enum CommandAnswer: Equatable {
    /// Done; the text says what the daemon published.
    case accepted(String)
    /// Refused; the reason code and the daemon's message.
    case refused(reason: String, message: String)

    /// Publishes `payload` on `topic` from a connection subscribed to `listen`, then waits up to
    /// `timeout` for the message `judge` recognises as the daemon's answer; nil when none came.
    ///
    /// Only messages that arrive after the broker acknowledged the command count: on one
    /// connection the broker delivers in order, so the retained messages it sent on subscribing
    /// come before its acknowledgement of the publish, and the daemon's answer after it. The
    /// acknowledgement is counted on the network thread that hands on the messages, so the
    /// handler sees it in that order (the daemon may answer within a millisecond).
    static func send(
        _ access: BrokerAccess, account: String?, topic: String, payload: [UInt8], listen: [String], timeout: TimeInterval,
        judge: @escaping @Sendable (_ topic: String, _ payload: [UInt8]) -> CommandAnswer?
    ) throws(BrokerConnectionError) -> CommandAnswer? {
        let state = Mutex<(connection: BrokerConnection?, answer: CommandAnswer?)>((nil, nil))
        let c = try access.reader(account: account, filters: listen) { t, p in
            state.withLock { s in
                guard let c = s.connection, c.acknowledgedCount > 0, s.answer == nil else { return }
                s.answer = judge(t, p)
            }
        }
        defer { c.stop() }
        state.withLock { $0.connection = c }
        try c.publishConfirmed(topic: topic, payload: payload)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let a = state.withLock({ $0.answer }) { return a }
            usleep(5_000)
        }
        return nil
    }

    /// A refusal on `commands/rejected` for `command` whose `key` member is `value`, if `payload` is one.
    static func refusal(_ payload: [UInt8], command: String, key: String, value: String) -> CommandAnswer? {
        guard case .success(let v) = JSONValue.parse(payload), case .string(command)? = v["command"], case .string(value)? = v[key],
            case .string(let reason)? = v["reason"]
        else { return nil }
        let message: String
        if case .string(let m)? = v["message"] { message = m } else { message = "" }
        return .refused(reason: reason, message: message)
    }
}
